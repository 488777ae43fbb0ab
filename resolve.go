package anamnesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
)

// Resolution says how Resolve settles a conflict.
type Resolution struct {
	// Keep is the id of the version to keep: the note or one of its
	// conflict copies, or one of two notes that both supersede the same
	// note. "" keeps the note itself (with Body).
	Keep string
	// Body, when not nil, is the merged text: it becomes the kept
	// version's body.
	Body *string
}

// ResolveReport says what Resolve did (`resolve --json`).
type ResolveReport struct {
	// Kept is the id that stays, and Path its file.
	Kept string `json:"kept"`
	Path string `json:"path"`
	// Removed are the conflict copies deleted; Superseded the other
	// successors of a fork, now superseded by Kept.
	Removed    []string `json:"removed"`
	Superseded []string `json:"superseded"`
}

// Conflict is a note with the versions that compete with it: merge
// conflict copies (a sync met overlapping edits), or other notes that
// supersede the same note (two machines replaced it independently).
type Conflict struct {
	ID       string   `json:"id"`
	Copies   []string `json:"copies,omitempty"`
	Rivals   []string `json:"rivals,omitempty"`   // other live successors of Replaces
	Replaces string   `json:"replaces,omitempty"` // the note the successors supersede
}

// Conflicts lists every unresolved conflict: each note with conflict
// copies, and each note superseded by more than one live note.
func (s *Store) Conflicts(ctx context.Context) ([]Conflict, error) {
	var out []Conflict
	byOf, err := guarded(ctx, s, func() (map[string][]string, error) { return s.idx().ConflictCopiesOf(ctx, nil) })
	if err != nil {
		return nil, err
	}
	var order []string
	for of := range byOf {
		order = append(order, of)
	}
	slices.Sort(order)
	for _, id := range order {
		out = append(out, Conflict{ID: id, Copies: byOf[id]})
	}
	forks, err := guarded(ctx, s, func() (map[string][]string, error) { return s.idx().Forks(ctx) })
	if err != nil {
		return nil, err
	}
	var replaced []string
	for of := range forks {
		replaced = append(replaced, of)
	}
	slices.Sort(replaced)
	for _, of := range replaced {
		succ := forks[of]
		out = append(out, Conflict{ID: succ[0], Rivals: succ[1:], Replaces: of})
	}
	return out, nil
}

// Resolve settles the conflict id is part of. For a note with conflict
// copies (id names the note or a copy): the kept version's title, body
// and tags (or the merged Body) become the note's, under the note's own
// id, and every copy is deleted. For two live notes superseding the same
// note: the kept one (with the merged Body, if given) supersedes the
// others. The change is committed at once, like a write; syncing it is
// the caller's (the CLI syncs, MCP starts a background sync).
func (s *Store) Resolve(ctx context.Context, id string, r Resolution) (ResolveReport, error) {
	if !note.ValidID(id) {
		return ResolveReport{}, fmt.Errorf("%q: %w", id, ErrInvalidID)
	}
	if r.Keep != "" && !note.ValidID(r.Keep) {
		return ResolveReport{}, fmt.Errorf("keep %q: %w", r.Keep, ErrInvalidID)
	}
	if err := s.writable("resolve a conflict"); err != nil {
		return ResolveReport{}, err
	}
	h, err := guarded(ctx, s, func() (index.Hit, error) { return s.idx().Get(ctx, id) })
	if errors.Is(err, index.ErrNotFound) {
		return ResolveReport{}, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	if err != nil {
		return ResolveReport{}, err
	}
	original := id
	if h.ConflictOf != "" {
		original = h.ConflictOf
	}
	copies, err := guarded(ctx, s, func() (map[string][]string, error) {
		return s.idx().ConflictCopiesOf(ctx, []string{original})
	})
	if err != nil {
		return ResolveReport{}, err
	}
	if len(copies[original]) > 0 {
		return s.resolveCopies(ctx, original, copies[original], r)
	}
	forks, err := guarded(ctx, s, func() (map[string][]string, error) { return s.idx().Forks(ctx) })
	if err != nil {
		return ResolveReport{}, err
	}
	for of, succ := range forks {
		if of == id || slices.Contains(succ, id) {
			return s.resolveFork(ctx, id, succ, r)
		}
	}
	return ResolveReport{}, invalidf("note %s has no conflict copy and no rival successor: nothing to resolve (`anamnesis status` lists conflicts)", id)
}

// resolveCopies keeps one version of original (or the merged text) under
// original's id and deletes the copies, in one commit.
func (s *Store) resolveCopies(ctx context.Context, original string, copies []string, r Resolution) (ResolveReport, error) {
	n, path, err := s.resolvedVersion(ctx, original, copies, r)
	if err != nil {
		return ResolveReport{}, err
	}
	rep := ResolveReport{Kept: original, Path: path, Removed: []string{}, Superseded: []string{}}
	var changes []index.Change
	var rels []string
	scope, rel, _ := note.SplitHomePath(path)
	t := s.tree(scope)
	if err := t.WriteFile(rel, note.Marshal(n)); err != nil {
		return rep, err
	}
	ch := s.readChange(t, rel)
	if ch.Note == nil {
		return rep, fmt.Errorf("re-read %s: %s", path, ch.File.Error)
	}
	changes, rels = append(changes, ch), append(rels, rel)
	for _, c := range copies {
		h, err := guarded(ctx, s, func() (index.Hit, error) { return s.idx().Get(ctx, c) })
		if err != nil {
			return rep, fmt.Errorf("find conflict copy %s: %w", c, err)
		}
		cscope, crel, _ := note.SplitHomePath(h.Path)
		if err := s.tree(cscope).Remove(crel); err != nil {
			return rep, fmt.Errorf("remove conflict copy %s: %w", h.Path, err)
		}
		changes = append(changes, index.Change{File: index.File{Path: h.Path}, Delete: true})
		if cscope == note.ScopePortable {
			rels = append(rels, crel)
		}
		rep.Removed = append(rep.Removed, c)
	}
	what := fmt.Sprintf("resolve conflict over %s %s: %s", n.ID, n.Title, "kept the merged or chosen version, removed conflict copies "+strings.Join(rep.Removed, ", "))
	return rep, s.applyAndCommit(ctx, changes, rels, scope == note.ScopePortable, what)
}

// resolvedVersion is original as resolved: the version r keeps (original
// or one of its copies), its body replaced by r's merged text when
// given, stamped now.
func (s *Store) resolvedVersion(ctx context.Context, original string, copies []string, r Resolution) (*note.Note, string, error) {
	keep := r.Keep
	if keep == "" {
		if r.Body == nil {
			return nil, "", invalidf("say which version of %s to keep (one of %s, %s) or give the merged text", original, original, strings.Join(copies, ", "))
		}
		keep = original
	}
	if keep != original && !slices.Contains(copies, keep) {
		return nil, "", invalidf("keep: %s is not %s or one of its conflict copies (%s)", keep, original, strings.Join(copies, ", "))
	}
	n, path, err := s.Get(ctx, original)
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", original, err)
	}
	if keep != original {
		k, _, err := s.Get(ctx, keep)
		if err != nil {
			return nil, "", fmt.Errorf("read %s: %w", keep, err)
		}
		n.Title, n.Body, n.Tags = k.Title, k.Body, k.Tags
	}
	if r.Body != nil {
		n.Body = *r.Body
	}
	n.UpdatedAt = note.Now(s.now())
	if err := n.Validate(); err != nil {
		return nil, "", invalidError{err}
	}
	return n, path, nil
}

// resolveFork makes the kept successor supersede the others.
func (s *Store) resolveFork(ctx context.Context, id string, succ []string, r Resolution) (ResolveReport, error) {
	keep := r.Keep
	if keep == "" {
		if r.Body == nil || !slices.Contains(succ, id) {
			return ResolveReport{}, invalidf("notes %s all replace the same note: say which to keep", strings.Join(succ, ", "))
		}
		keep = id
	}
	if !slices.Contains(succ, keep) {
		return ResolveReport{}, invalidf("keep: %s is not one of the notes that replace the same note (%s)", keep, strings.Join(succ, ", "))
	}
	n, _, err := s.Get(ctx, keep)
	if err != nil {
		return ResolveReport{}, err
	}
	rep := ResolveReport{Kept: keep, Removed: []string{}, Superseded: []string{}}
	for _, o := range succ {
		if o != keep && !slices.Contains(n.Supersedes, o) {
			n.Supersedes = append(n.Supersedes, o)
			rep.Superseded = append(rep.Superseded, o)
		}
	}
	if r.Body != nil {
		n.Body = *r.Body
	}
	path, err := s.Update(ctx, n)
	rep.Path = path
	return rep, err
}

// applyAndCommit indexes changes and, for a portable note, commits the
// given memory/ paths in one commit.
func (s *Store) applyAndCommit(ctx context.Context, changes []index.Change, rels []string, portable bool, what string) error {
	indexErr := s.guard(ctx, func() error {
		_, err := s.idx().Apply(ctx, changes)
		return err
	})
	if indexErr != nil {
		s.notice(fmt.Sprintf("resolved, but not indexed yet (%v); `anamnesis reindex` indexes it", indexErr))
	}
	if !portable || len(rels) == 0 {
		return nil
	}
	if err := s.commitNotes(ctx, rels, indexErr == nil, what); err != nil {
		s.notice(fmt.Sprintf("resolved but not committed: %v; the next `anamnesis sync` commits it", err))
	}
	return nil
}

// pairConflicts puts each conflict copy right after the note it conflicts
// with, fetching whichever of the two is missing from hits, so a reader
// always sees both versions together (the copy was the newer note's
// rival; alone, or first, it reads as the truth). Other hits keep their
// order.
func (s *Store) pairConflicts(ctx context.Context, hits []index.Hit) ([]index.Hit, error) {
	var ids []string
	copyOf := false
	for _, h := range hits {
		ids = append(ids, h.ID)
		copyOf = copyOf || h.ConflictOf != ""
	}
	copies, err := guarded(ctx, s, func() (map[string][]string, error) { return s.idx().ConflictCopiesOf(ctx, ids) })
	if err != nil {
		return nil, err
	}
	if len(copies) == 0 && !copyOf {
		return hits, nil
	}
	p := pairing{ctx: ctx, s: s, byID: map[string]index.Hit{}, done: map[string]bool{}, out: make([]index.Hit, 0, len(hits))}
	for _, h := range hits {
		p.byID[h.ID] = h
	}
	for _, h := range hits {
		if h.ConflictOf != "" {
			if o, ok := p.get(h.ConflictOf); ok {
				p.withCopies(o)
				continue
			}
		}
		switch {
		case p.done[h.ID]:
		case len(copies[h.ID]) > 0:
			p.withCopies(h)
		default:
			p.add(h)
		}
	}
	return p.out, nil
}

// pairing is one pairConflicts under way: the hits known by id, and the
// result so far.
type pairing struct {
	ctx  context.Context
	s    *Store
	byID map[string]index.Hit
	done map[string]bool // ids in out
	out  []index.Hit
}

// get is note id, from the hits or else the index (ok is false when it
// is gone since: nothing to pair).
func (p *pairing) get(id string) (index.Hit, bool) {
	if h, ok := p.byID[id]; ok {
		return h, true
	}
	h, err := guarded(p.ctx, p.s, func() (index.Hit, error) { return p.s.idx().Get(p.ctx, id) })
	if err != nil {
		return index.Hit{}, false
	}
	p.byID[id] = h
	return h, true
}

// add puts h in the result.
func (p *pairing) add(h index.Hit) {
	p.done[h.ID] = true
	p.out = append(p.out, h)
}

// withCopies puts original in the result (once), followed by its
// conflict copies.
func (p *pairing) withCopies(original index.Hit) {
	if p.done[original.ID] {
		return
	}
	p.add(original)
	more, err := guarded(p.ctx, p.s, func() (map[string][]string, error) {
		return p.s.idx().ConflictCopiesOf(p.ctx, []string{original.ID})
	})
	if err != nil {
		return
	}
	for _, c := range more[original.ID] {
		if h, ok := p.get(c); ok && !p.done[c] {
			p.add(h)
		}
	}
}
