package webui

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/note"
)

// maxSearchPages bounds search paging: page N ranks N*50 results.
const maxSearchPages = 20

// statusOf maps a Store error to an HTTP status: the caller's mistakes
// are 400 and 404, anything else 500.
func statusOf(err error) int {
	switch {
	case errors.Is(err, anamnesis.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, anamnesis.ErrInvalidID), errors.Is(err, anamnesis.ErrInvalid):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// row is a note in a list.
type row struct {
	anamnesis.Hit
	Superseded bool
	// By is the first note that supersedes it (search links it: a
	// superseded hit is there to be compared with what replaced it).
	By      string
	Score   string
	Passage []segment // search: the part that matched, words marked
}

type notesData struct {
	Q, Type, Project, Scope, Machine, Source, Mode string
	Live                                           bool
	LiveParam                                      string // "1" when Live, for links
	// WithSuperseded: search ranks superseded notes too; SupParam is
	// "1" then, for links.
	WithSuperseded         bool
	SupParam               string
	Searching, HasEmbedder bool
	Degraded               string
	Rows                   []row
	Total                  int
	Facets                 anamnesis.Facets
	Types                  []string
	NextUpdated, NextID    string
	Paged                  bool // not the first page
	// Search pages: Page is this one (from 1), NextPage the next or 0,
	// From the number of the first result shown.
	Page, NextPage, From int
	Filtered             bool // a filter is set
}

func (s *Server) notesPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	d := s.notesQuery(q)
	f := d.filter()
	var hits []anamnesis.Hit
	var err error
	var best float64
	if d.Q != "" {
		hits, best, err = s.searchPage(ctx, &d, f, q.Get("page"))
	} else {
		hits, err = s.listPage(ctx, &d, f, q.Get("bu"), q.Get("bi"))
	}
	if err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	if d.Facets, err = s.facetsWithin(ctx, d.filter()); err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	if d.Rows, err = s.rows(ctx, hits, d.Searching, d.Q, best); err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	title := "Notes"
	if d.Searching {
		title = "Search: " + d.Q
	}
	s.render(w, r, http.StatusOK, "notes", title, "notes", d, "")
}

// notesQuery reads the notes page's query: the search, its mode and the
// filters.
func (s *Server) notesQuery(q url.Values) notesData {
	d := notesData{Q: strings.TrimSpace(q.Get("q")), Type: q.Get("type"), Project: q.Get("project"), Scope: q.Get("scope"),
		Machine: q.Get("machine"), Source: q.Get("source"), Mode: q.Get("mode"), Live: q.Get("live") == "1",
		HasEmbedder: s.st.HasEmbedder(), Types: note.Types()}
	if d.Live {
		d.LiveParam = "1"
	}
	if q.Get("sup") == "1" {
		d.WithSuperseded, d.SupParam = true, "1"
	}
	d.Filtered = d.Type != "" || d.Project != "" || d.Scope != "" || d.Machine != "" || d.Source != ""
	return d
}

// filter is the page's filters as the Store takes them.
func (d *notesData) filter() anamnesis.Filter {
	return anamnesis.Filter{Type: d.Type, Project: d.Project, Scope: d.Scope, MachineID: d.Machine, ProvSource: d.Source}
}

// searchPage is the page-th page (from 1, at most maxSearchPages) of the
// search for d.Q, and the best score of all pages, which relevance is
// measured against.
func (s *Server) searchPage(ctx context.Context, d *notesData, f anamnesis.Filter, page string) ([]anamnesis.Hit, float64, error) {
	d.Searching = true
	if d.Mode == "" {
		d.Mode = s.st.DefaultMode()
	}
	// Paging asks for every result up to the page: search ranks the
	// whole store each time anyway, and pages are few.
	d.Page = 1
	if p, err := strconv.Atoi(page); err == nil && p > 1 && p <= maxSearchPages {
		d.Page = p
	}
	f.Limit = PageSize*d.Page + 1
	f.WithSuperseded = d.WithSuperseded
	hits, degraded, err := s.st.SearchMode(ctx, d.Q, f, d.Mode)
	if degraded != nil {
		d.Degraded = degraded.Error()
	}
	best := 0.0
	if len(hits) > 0 {
		best = hits[0].Score // relevance is to the best match of all pages
	}
	if len(hits) > PageSize*d.Page {
		hits = hits[:PageSize*d.Page]
		if d.Page < maxSearchPages {
			d.NextPage = d.Page + 1
		}
	}
	d.From = PageSize*(d.Page-1) + 1
	if len(hits) < d.From {
		return nil, best, err
	}
	return hits[d.From-1:], best, err
}

// listPage is a page of the notes, newest first, from the keyset cursor
// (updated_at bu, id bi) when there is one, with the total they come
// from.
func (s *Server) listPage(ctx context.Context, d *notesData, f anamnesis.Filter, bu, bi string) ([]anamnesis.Hit, error) {
	f.Live = d.Live
	var err error
	if d.Total, err = s.st.Count(ctx, f); err != nil {
		return nil, err
	}
	f.Limit = PageSize + 1
	if bu != "" && bi != "" {
		f.Before = &anamnesis.Cursor{UpdatedAt: bu, ID: bi}
		d.Paged = true
	}
	hits, err := s.st.List(ctx, f)
	if len(hits) > PageSize {
		hits = hits[:PageSize]
		last := hits[len(hits)-1]
		d.NextUpdated, d.NextID = last.UpdatedAt, last.ID
	}
	return hits, err
}

// rows are the list's rows for hits: superseded ones marked and, for a
// search, each with its passage, its relevance to the best score and
// the note that replaced it.
func (s *Server) rows(ctx context.Context, hits []anamnesis.Hit, searching bool, query string, best float64) ([]row, error) {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	sup, err := s.st.SupersededBy(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []row
	for _, h := range hits {
		rw := row{Hit: h, Superseded: len(sup[h.ID]) > 0}
		if searching {
			rw.Passage = passage(h.Body, query)
			if rw.Superseded {
				rw.By = sup[h.ID][0]
			}
			if best > 0 {
				rw.Score = fmt.Sprintf("%.2f", anamnesis.Relevance(h.Score, best))
			}
		}
		out = append(out, rw)
	}
	return out, nil
}

// version is one history entry with its diff from the one before.
type version struct {
	anamnesis.Version
	Diff    []DiffLine // of the body
	Front   string     // which frontmatter keys changed, in one line
	Created bool
}

type ref struct {
	ID, Title string
	Missing   bool
}

type noteData struct {
	Note         *note.Note
	Path         string
	Front        string
	Body         string
	Versions     []version
	History      anamnesis.History
	HistoryError string
	// HistoryBuilding: the version index is being built (first start).
	HistoryBuilding bool
	VersionsTotal   int
	// From is the first version shown (0: the newest); NextFrom the
	// first of the next page of the history, 0 when there is none.
	From, NextFrom int
	Supersedes     []ref
	SupersededBy   []ref
	CopyOf         string   // this note is a conflict copy of CopyOf
	Copies         []string // this note's conflict copies
	Rivals         []string
}

func (s *Server) notePage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	n, path, data, err := s.st.GetFile(ctx, id)
	if err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	d := noteData{Note: n, Path: path}
	d.Front, _ = splitFrontmatter(data)
	d.Body = n.Body
	for _, sid := range n.Supersedes {
		d.Supersedes = append(d.Supersedes, s.refOf(r, sid))
	}
	by, err := s.st.SupersededBy(ctx, []string{id})
	if err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	for _, b := range by[id] {
		d.SupersededBy = append(d.SupersededBy, s.refOf(r, b))
	}
	conflicts, err := s.st.Conflicts(ctx)
	if err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	d.relate(conflicts, id)
	if f, err := strconv.Atoi(r.URL.Query().Get("from")); err == nil && f > 0 {
		d.From = f
	}
	h, total, building, err := s.historyOf(ctx, path, d.From, versionsShown)
	if err != nil {
		d.HistoryError = err.Error() // the note is still worth showing
	}
	d.History, d.HistoryBuilding, d.VersionsTotal = h, building, total
	d.Versions, d.NextFrom = versionDiffs(h, d.From, versionsShown)
	s.render(w, r, http.StatusOK, "note", n.Title, "notes", d, s.doneFlash(r.URL.Query().Get("done")))
}

// relate finds note id among the conflicts: the note of conflict
// copies, a copy, or one of the rivals of a fork.
func (d *noteData) relate(conflicts []anamnesis.Conflict, id string) {
	for _, c := range conflicts {
		switch {
		case c.ID == id && len(c.Copies) > 0:
			d.Copies = c.Copies
		case slices.Contains(c.Copies, id):
			d.CopyOf = c.ID
		case c.ID == id || slices.Contains(c.Rivals, id):
			for _, o := range append([]string{c.ID}, c.Rivals...) {
				if o != id {
					d.Rivals = append(d.Rivals, o)
				}
			}
		}
	}
}

// versionDiffs are up to limit of h's versions, each with its diff from
// the one before it, and the first version of the next page (0: none).
// History holds one version more than it shows when there is an older
// one: the base of the last diff.
func versionDiffs(h anamnesis.History, from, limit int) (out []version, nextFrom int) {
	for i, v := range h.Versions {
		if i == limit {
			return out, from + limit // the last one read is only the base of a diff
		}
		ver := version{Version: v}
		prev := ""
		if i+1 < len(h.Versions) {
			prev = h.Versions[i+1].Content
		} else {
			ver.Created = h.Complete
		}
		if !ver.Created {
			pf, pb := splitFrontmatter([]byte(prev))
			cf, cb := splitFrontmatter([]byte(v.Content))
			ver.Diff = markWords(diffLines(pb, cb, 3))
			ver.Front = frontSummary(pf, cf)
		}
		out = append(out, ver)
	}
	return out, 0
}

// doneFlash is the message after a redirect from a save, a new note or a
// restore (the done parameter), and whether a sync has started.
func (s *Server) doneFlash(done string) string {
	flash := ""
	switch done {
	case "saved":
		flash = "Saved and committed."
	case "written":
		flash = "Note written and committed."
	case "restored":
		flash = "The old version is restored, as a new commit."
	}
	if flash != "" && s.opts.SyncConfigured {
		flash += " A sync to your other machines has started in the background."
	}
	return flash
}

// refOf names a note by id and title, for links.
func (s *Server) refOf(r *http.Request, id string) ref {
	n, _, _, err := s.st.GetFile(r.Context(), id)
	if err != nil {
		return ref{ID: id, Missing: true}
	}
	return ref{ID: id, Title: n.Title}
}

func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// editData fills the edit and write form.
type editData struct {
	New        bool
	ID         string
	Type       string
	Title      string
	Project    string
	Scope      string
	Tags       string
	Body       string
	Supersedes string
	Base       string // hash of the file the form was made from
	Types      []string
	Error      string
	// Stale: the note changed since the form was made; Current is the
	// note now, Diff from it to the submitted text.
	Stale   bool
	Current *note.Note
	Diff    []DiffLine
	// Preview: the form was sent with "Preview", to be shown rendered
	// above itself and not saved.
	Preview bool
	// Projects and Tags are what the store already uses, suggested.
	Projects, TagsInUse []string
}

// maxTagSuggestions bounds the tags the editor suggests.
const maxTagSuggestions = 40

// suggest fills the editor's suggestions: every project (from the
// filter counts, most notes first) and the tags of the newest notes.
func (s *Server) suggest(r *http.Request, d *editData) {
	ctx := r.Context()
	if f, err := s.facets(ctx); err == nil { // suggestions are optional
		for _, kv := range sortedCounts(f.ByProject) {
			d.Projects = append(d.Projects, kv.K)
		}
	}
	hits, err := s.st.List(ctx, anamnesis.Filter{Limit: 500})
	if err != nil {
		return
	}
	count := map[string]int{}
	for _, h := range hits {
		for _, t := range h.Tags {
			count[t]++
		}
	}
	for _, kv := range sortedCounts(count) {
		if len(d.TagsInUse) == maxTagSuggestions {
			break
		}
		d.TagsInUse = append(d.TagsInUse, kv.K)
	}
}

func (s *Server) editPage(w http.ResponseWriter, r *http.Request) {
	n, _, data, err := s.st.GetFile(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	d := editData{ID: n.ID, Type: n.Type, Title: n.Title, Project: n.Project, Scope: n.Scope,
		Tags: strings.Join(n.Tags, ", "), Body: n.Body, Base: hashOf(data), Types: note.Types()}
	s.suggest(r, &d)
	s.render(w, r, http.StatusOK, "edit", "Edit: "+n.Title, "notes", d, "")
}

func formTags(v string) []string {
	var out []string
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// formBody is the body as a textarea sends it: browsers send CRLF line
// ends, which a note file should not get.
func formBody(v string) string {
	return strings.ReplaceAll(v, "\r\n", "\n")
}

func (s *Server) saveEdit(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	d := editData{ID: id, Title: r.PostForm.Get("title"), Project: r.PostForm.Get("project"),
		Tags: r.PostForm.Get("tags"), Body: formBody(r.PostForm.Get("body")), Base: r.PostForm.Get("base"), Types: note.Types()}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	n, _, data, err := s.st.GetFile(ctx, id)
	if err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	d.Type, d.Scope = n.Type, n.Scope
	if r.PostForm.Get("preview") != "" {
		d.Preview = true
		s.suggest(r, &d)
		s.render(w, r, http.StatusOK, "edit", "Edit: "+n.Title, "notes", d, "")
		return
	}
	if cur := hashOf(data); cur != d.Base {
		// Changed since the form was made (another machine's sync, an
		// agent's write, another tab): show both and let the user decide;
		// saving again from this page overwrites the new version.
		d.Stale, d.Current, d.Base = true, n, cur
		d.Diff = diffLines(n.Body, d.Body, 3)
		s.render(w, r, http.StatusConflict, "edit", "Edit: "+n.Title, "notes", d, "")
		return
	}
	n.Title, n.Body, n.Tags = strings.TrimSpace(d.Title), d.Body, formTags(d.Tags)
	n.Project = strings.TrimSpace(d.Project)
	if n.Project == "" {
		n.Project = note.DefaultProject
	}
	if _, err := s.st.Update(ctx, n); err != nil {
		d.Error = err.Error()
		s.render(w, r, statusOf(err), "edit", "Edit: "+n.Title, "notes", d, "")
		return
	}
	s.afterWrite()
	http.Redirect(w, r, "/note/"+id+"?done=saved", http.StatusSeeOther)
}

func (s *Server) afterWrite() {
	s.forgetFacets()
	if s.opts.AfterWrite != nil {
		s.opts.AfterWrite()
	}
}

func (s *Server) newPage(w http.ResponseWriter, r *http.Request) {
	d := editData{New: true, Type: note.TypeSemantic, Scope: note.ScopePortable, Types: note.Types()}
	if old := r.URL.Query().Get("supersedes"); old != "" {
		n, _, _, err := s.st.GetFile(r.Context(), old)
		if err != nil {
			s.fail(w, r, statusOf(err), err)
			return
		}
		d.Supersedes, d.Type, d.Title, d.Project, d.Scope = n.ID, n.Type, n.Title, n.Project, n.Scope
		d.Tags, d.Body = strings.Join(n.Tags, ", "), n.Body
	}
	title := "Write a note"
	if d.Supersedes != "" {
		title = "Supersede a note"
	}
	s.suggest(r, &d)
	s.render(w, r, http.StatusOK, "edit", title, "new", d, "")
}

func (s *Server) saveNew(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	d := editData{New: true, Type: f.Get("type"), Title: f.Get("title"), Project: f.Get("project"), Scope: f.Get("scope"),
		Tags: f.Get("tags"), Body: formBody(f.Get("body")), Supersedes: strings.TrimSpace(f.Get("supersedes")), Types: note.Types()}
	if f.Get("preview") != "" {
		d.Preview = true
		s.suggest(r, &d)
		s.render(w, r, http.StatusOK, "edit", "Write a note", "new", d, "")
		return
	}
	req := anamnesis.WriteRequest{Type: d.Type, Title: d.Title, Body: d.Body, Project: d.Project, Tags: formTags(d.Tags), Scope: d.Scope}
	if d.Supersedes != "" {
		req.Supersedes = []string{d.Supersedes}
	}
	s.writeMu.Lock()
	n, _, err := s.st.Write(r.Context(), req)
	s.writeMu.Unlock()
	if err != nil {
		d.Error = err.Error()
		s.render(w, r, statusOf(err), "edit", "Write a note", "new", d, "")
		return
	}
	s.afterWrite()
	http.Redirect(w, r, "/note/"+n.ID+"?done=written", http.StatusSeeOther)
}

// card is one version in a conflict.
type card struct {
	ID      string
	Note    *note.Note
	Error   string
	IsCopy  bool
	IsFirst bool
	// By and At are the machine and time of this version's commit, as
	// far as the history says (empty: it does not); the note's own
	// machine_id names who first wrote the note, the same for every
	// version.
	By, At string
	made   madeQuery // what names By and At
}

// madeQuery asks who made a version of the note file at path (relative
// to the home): the one whose blob's name starts with blobPrefix, or,
// without one, the newest whose text is body.
type madeQuery struct {
	path, blobPrefix, body string
}

type conflictView struct {
	ID       string
	Kind     string // "copies" or "fork"
	Replaces ref
	Cards    []card
	// Sides is the first version against each other one, side by side.
	Sides []sideDiff
	Merge string // the text the merge box starts with: both versions merged
}

// sideDiff is two versions side by side, row by row.
type sideDiff struct {
	Left, Right card
	Rows        []sideRow
}

type sideRow struct {
	Left, Right *DiffLine // nil: nothing on that side
	Skip        string    // a run of unchanged lines left out
}

// sideBySide lays a line diff from a to b out in two columns: unchanged
// lines on both sides, removed lines left beside the added lines that
// replace them (changed words marked), the rest alone.
func sideBySide(a, b string) []sideRow {
	lines := markWords(diffLines(a, b, 2))
	var rows []sideRow
	for i := 0; i < len(lines); {
		switch lines[i].Op {
		case '~':
			rows = append(rows, sideRow{Skip: lines[i].Text})
			i++
		case ' ':
			rows = append(rows, sideRow{Left: &lines[i], Right: &lines[i]})
			i++
		default:
			d, e := changeRun(lines, i)
			for k := 0; k < max(d-i, e-d); k++ {
				var r sideRow
				if i+k < d {
					r.Left = &lines[i+k]
				}
				if d+k < e {
					r.Right = &lines[d+k]
				}
				rows = append(rows, r)
			}
			i = e
		}
	}
	return rows
}

// unionMerge is a starting point for a merge by hand: the lines both
// versions share once, and where they differ, a's lines then b's, so
// nothing of either is lost and the user deletes what should go.
func unionMerge(a, b string) string {
	lines := diffLines(a, b, 1<<30) // all context: every line
	if lines == nil {
		return a
	}
	var out []string
	for _, l := range lines {
		if l.Op != '~' {
			out = append(out, l.Text)
		}
	}
	// diffLines lists a run's removed lines before its added ones: a's
	// text then b's, as wanted.
	return strings.Join(out, "\n") + "\n"
}

// conflictCopyName matches a conflict copy's file: the note's path with
// .conflict-<8 hex of the kept blob> before .md (gitsync names them).
var conflictCopyName = regexp.MustCompile(`^(.*)\.conflict-([0-9a-f]{8})\.md$`)

func (s *Server) conflictsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	cs, err := s.st.Conflicts(ctx)
	if err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	views := make([]conflictView, len(cs))
	for i, c := range cs {
		views[i] = s.conflictCards(ctx, r, c)
	}
	s.nameMakers(ctx, views)
	for i := range views {
		views[i].compare()
	}
	flash := ""
	if id := r.URL.Query().Get("resolved"); note.ValidID(id) {
		flash = "Resolved: kept " + id + "."
		if s.opts.SyncConfigured {
			flash += " A sync has started in the background."
		}
	}
	s.render(w, r, http.StatusOK, "conflicts", "Conflicts", "conflicts", views, flash)
}

// conflictCards is conflict c's view with a card per version: the note
// first, then its conflict copies or, for a fork, its rivals. Who made
// each version is left to nameMakers, and the comparison to compare.
func (s *Server) conflictCards(ctx context.Context, r *http.Request, c anamnesis.Conflict) conflictView {
	v := conflictView{ID: c.ID, Kind: "copies"}
	ids := append([]string{c.ID}, c.Copies...)
	if len(c.Copies) == 0 {
		v.Kind = "fork"
		v.Replaces = s.refOf(r, c.Replaces)
		ids = append([]string{c.ID}, c.Rivals...)
	}
	mainPath := ""
	for i, id := range ids {
		cd := card{ID: id, IsCopy: v.Kind == "copies" && i > 0, IsFirst: i == 0}
		n, path, _, err := s.st.GetFile(ctx, id)
		if err != nil {
			cd.Error = err.Error()
			v.Cards = append(v.Cards, cd)
			continue
		}
		cd.Note = n
		if i == 0 {
			mainPath = path
		}
		if m := conflictCopyName.FindStringSubmatch(path); m != nil && cd.IsCopy && mainPath != "" {
			// The copy holds the version a sync set aside: its blob, at
			// the note's own path, is the other machine's commit.
			cd.made = madeQuery{path: mainPath, blobPrefix: m[2]}
		} else {
			cd.made = madeQuery{path: path, body: n.Body}
		}
		v.Cards = append(v.Cards, cd)
	}
	return v
}

// nameMakers fills in By and At of every card on the page whose version
// the history holds, opening the version index once for them all (each
// opening reads HEAD and brings the index up to it). Only portable notes
// are in the history: a page of machine-local ones opens nothing.
func (s *Server) nameMakers(ctx context.Context, views []conflictView) {
	type ask struct {
		cd  *card
		rel string // the path inside memory/
	}
	var asks []ask
	for i := range views {
		for j := range views[i].Cards {
			cd := &views[i].Cards[j]
			if cd.Note == nil {
				continue
			}
			if scope, rel, _ := note.SplitHomePath(cd.made.path); scope == note.ScopePortable {
				asks = append(asks, ask{cd, rel})
			}
		}
	}
	if len(asks) == 0 {
		return
	}
	v, err := s.versions(ctx)
	if err != nil || v == nil {
		return // the index is building or there is no history: no names
	}
	defer v.mu.Unlock()
	for _, a := range asks {
		a.cd.By, a.cd.At, _ = v.whoMade(a.rel, a.cd.made.blobPrefix, a.cd.made.body)
	}
}

// compare sets the side-by-side diffs of the first version against each
// other one, and the merge box's text: every version merged.
func (v *conflictView) compare() {
	first := v.Cards[0].Note
	if first == nil {
		return
	}
	v.Merge = first.Body
	for _, cd := range v.Cards[1:] {
		if cd.Note == nil {
			continue
		}
		v.Sides = append(v.Sides, sideDiff{Left: v.Cards[0], Right: cd, Rows: sideBySide(first.Body, cd.Note.Body)})
		v.Merge = unionMerge(v.Merge, cd.Note.Body)
	}
}

func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	id := f.Get("id")
	var res anamnesis.Resolution
	res.Keep = f.Get("keep")
	if f.Get("action") == "merge" {
		body := formBody(f.Get("body"))
		res.Body = &body
	}
	s.writeMu.Lock()
	rep, err := s.st.Resolve(r.Context(), id, res)
	s.writeMu.Unlock()
	if err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	s.afterWrite()
	http.Redirect(w, r, "/conflicts?resolved="+rep.Kept, http.StatusSeeOther)
}

type fleetView struct {
	Fleet       *fleetData
	FleetError  string
	Index       anamnesis.IndexStatus
	Vectors     *anamnesis.VectorStatus
	Facets      anamnesis.Facets
	Remote      string
	Head        string
	Home        string
	Slow        slowSnapshot
	HasTailnet  bool
	CheckedAgo  string
	NumProblems int
	NumWarnings int
}

func (s *Server) fleetPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v := fleetView{Remote: gitsync.Redact(s.st.Remote()), Home: s.st.Home(), HasTailnet: s.opts.Tailnet != nil}
	var err error
	if v.Fleet, err = s.fleetOf(ctx); err != nil {
		v.FleetError = err.Error()
	}
	if v.Index, err = s.st.IndexState(ctx); err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	if v.Vectors, err = s.st.Vectors(ctx); err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	if v.Facets, err = s.facets(ctx); err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	if v.Head, err = s.st.Head(ctx); err != nil {
		v.FleetError = err.Error()
	}
	v.Slow = s.slow.snapshot()
	if !v.Slow.Running && (v.Slow.At.IsZero() || s.opts.Now().Sub(v.Slow.At) > slowMaxAge) {
		s.refreshSlow(false)
		v.Slow.Running = true
	}
	if !v.Slow.At.IsZero() {
		v.CheckedAgo = ago(s.opts.Now(), v.Slow.At.Format(time.RFC3339Nano))
	}
	for _, c := range v.Slow.Checks {
		switch c.State {
		case anamnesis.CheckProblem:
			v.NumProblems++
		case anamnesis.CheckWarn:
			v.NumWarnings++
		}
	}
	s.render(w, r, http.StatusOK, "fleet", "Fleet", "fleet", v, "")
}

func (s *Server) refreshFleet(w http.ResponseWriter, r *http.Request) {
	s.refreshSlow(false)
	http.Redirect(w, r, "/fleet", http.StatusSeeOther)
}
