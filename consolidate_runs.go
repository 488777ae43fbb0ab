package anamnesis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/anamnesis-memory/anamnesis/consolidate"
	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/note"
)

// ConsolidateRun is one applied run, read back from the history.
type ConsolidateRun struct {
	Run     string   `json:"run"` // the commit
	When    string   `json:"when"`
	Model   string   `json:"model"`
	Changes []string `json:"changes"`
	// UndoneBy is the commit that undid it ("" : in force).
	UndoneBy string `json:"undone_by,omitempty"`
}

// ConsolidateLog lists the runs in the newest maxCommits commits, newest
// first. Runs made on other machines arrive with a sync like any change.
func (s *Store) ConsolidateLog(ctx context.Context, maxCommits int) ([]ConsolidateRun, error) {
	r, err := s.repo(ctx)
	if err != nil {
		return nil, err
	}
	var runs []ConsolidateRun
	undone := map[string]string{}
	_, err = r.WalkLog(ctx, maxCommits, func(c gitsync.Commit) (bool, error) {
		subject, body, _ := strings.Cut(c.Message, "\n")
		if h, ok := strings.CutPrefix(subject, undoSubject); ok {
			undone[strings.TrimSpace(h)] = c.Hash.String()
			return false, nil
		}
		if !strings.HasPrefix(subject, consolidateSubject+" ") {
			return false, nil
		}
		run := ConsolidateRun{Run: c.Hash.String(), When: c.Time.UTC().Format("2006-01-02T15:04:05Z")}
		for _, line := range strings.Split(body, "\n") {
			line = strings.TrimSpace(line)
			switch {
			case line == "":
			case strings.HasPrefix(line, runTrailer):
				run.Model = strings.TrimPrefix(line, runTrailer)
			default:
				run.Changes = append(run.Changes, line)
			}
		}
		runs = append(runs, run)
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read consolidation runs: %w", err)
	}
	for i := range runs {
		runs[i].UndoneBy = undone[runs[i].Run]
	}
	return runs, nil
}

// UndoConsolidate undoes a run (run: a commit or a prefix of one; "" : the
// newest run in force) with a new commit: notes the run wrote are taken
// out of memory/ (git history keeps them), and the tags and supersedes it
// added to other notes are removed, leaving later edits of those notes as
// they are. It returns the new commit.
func (s *Store) UndoConsolidate(ctx context.Context, run string) (string, error) {
	runs, err := s.ConsolidateLog(ctx, 5000)
	if err != nil {
		return "", err
	}
	target, err := runToUndo(runs, run)
	if err != nil {
		return "", err
	}
	if err := s.writable("undo a consolidation"); err != nil {
		return "", err
	}
	r, err := s.repo(ctx)
	if err != nil {
		return "", err
	}
	u := runUndo{s: s, r: r, trees: r.Trees()}
	if err := u.readRun(target.Run); err != nil {
		return "", err
	}
	var parent gitsync.Hash // before a root commit: the empty tree
	if u.before != nil {
		parent = u.before.Hash
	}
	paths, err := r.ChangedPaths(parent, u.run.Hash)
	if err != nil {
		return "", err
	}
	for _, rel := range paths {
		if err := u.undoFile(rel); err != nil {
			return "", err
		}
	}
	return u.commit(ctx, target.Run)
}

// runToUndo is the run of runs that run names (a commit or a prefix of
// one; "": the newest run in force), which must not be undone already.
func runToUndo(runs []ConsolidateRun, run string) (*ConsolidateRun, error) {
	for i := range runs {
		if run == "" && runs[i].UndoneBy == "" || run != "" && strings.HasPrefix(runs[i].Run, strings.ToLower(run)) {
			if runs[i].UndoneBy != "" {
				return nil, fmt.Errorf("run %.12s was undone already by %.12s", runs[i].Run, runs[i].UndoneBy)
			}
			return &runs[i], nil
		}
	}
	if run == "" {
		return nil, errors.New("no consolidation run to undo (`anamnesis consolidate --log` lists them)")
	}
	return nil, fmt.Errorf("no consolidation run %s (`anamnesis consolidate --log` lists them)", run)
}

// runUndo is one UndoConsolidate under way: the run's commit and the one
// before it, and what the undo changed so far.
type runUndo struct {
	s      *Store
	r      *gitsync.Repo
	trees  *gitsync.Trees
	run    gitsync.Commit
	before *gitsync.Commit // nil: the run is the root commit
	files  []staged        // notes the run tagged or made supersede, restored
	gone   []string        // notes the run wrote, taken out
}

// readRun reads the run's commit and its first parent.
func (u *runUndo) readRun(run string) error {
	h, err := gitsync.ParseHash(run)
	if err != nil {
		return fmt.Errorf("read run %.12s: %w", run, err)
	}
	if u.run, err = u.r.CommitAt(h); err != nil {
		return fmt.Errorf("read run %.12s: %w", run, err)
	}
	if len(u.run.Parents) == 0 {
		return nil
	}
	p, err := u.r.CommitAt(u.run.Parents[0])
	if err != nil {
		return fmt.Errorf("read the commit before run %.12s: %w", run, err)
	}
	u.before = &p
	return nil
}

// undoFile undoes the run's change to one file: a note it wrote is taken
// out; from a note it changed, the tags and supersedes it added are
// removed, later edits kept. A file that is no note after the run, or
// is gone now, is left alone.
func (u *runUndo) undoFile(rel string) error {
	after, err := noteAt(u.r, u.trees, &u.run, rel)
	if err != nil || after == nil {
		return nil
	}
	before, err := noteAt(u.r, u.trees, u.before, rel)
	if err != nil {
		return err
	}
	if before == nil { // the run wrote it
		if err := u.s.memory.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		u.gone = append(u.gone, rel)
		return nil
	}
	addedTags, addedSup := minus(after.Tags, before.Tags), minus(after.Supersedes, before.Supersedes)
	data, _, err := u.s.memory.ReadFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	cur, err := note.Parse(data)
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	cur.Tags, cur.Supersedes = minus(cur.Tags, addedTags), minus(cur.Supersedes, addedSup)
	if err := u.s.memory.WriteFile(rel, note.Marshal(cur)); err != nil {
		return err
	}
	u.files = append(u.files, staged{rel: rel, old: data})
	return nil
}

// commit indexes what the undo changed and commits it, naming the run.
func (u *runUndo) commit(ctx context.Context, run string) (string, error) {
	s := u.s
	indexErr := s.indexStaged(ctx, u.files, u.gone)
	rels := append(slices.Clone(u.gone), make([]string, 0, len(u.files))...)
	for _, f := range u.files {
		rels = append(rels, f.rel)
	}
	msg := fmt.Sprintf("%s%s\n\nby %s at %s: %d note(s) taken out, %d note(s) shown again\n", undoSubject, run, s.machineID, note.Now(s.now()), len(u.gone), len(u.files))
	head, err := s.commitNotesMessage(ctx, rels, indexErr == nil, msg)
	if err != nil {
		return "", fmt.Errorf("commit the undo: %w", err)
	}
	return head.String(), indexErr
}

// noteAt is the note rel at commit c (nil: no commit, no such file, or
// not a note).
func noteAt(r *gitsync.Repo, trees *gitsync.Trees, c *gitsync.Commit, rel string) (*note.Note, error) {
	if c == nil {
		return nil, nil
	}
	blob, err := trees.BlobAt(c.Tree, rel)
	if err != nil {
		return nil, fmt.Errorf("read %s at %.12s: %w", rel, c.Hash, err)
	}
	if blob.IsZero() {
		return nil, nil
	}
	text, err := r.ReadBlob(blob, gitsync.MaxBlobBytes+1)
	if errors.Is(err, gitsync.ErrNoObject) {
		return nil, nil // as go-git's Commit.File says of a missing blob
	}
	if err != nil {
		return nil, fmt.Errorf("read %s at %.12s: %w", rel, c.Hash, err)
	}
	n, err := note.Parse(text)
	if err != nil {
		return nil, nil // not a note: nothing of ours to undo in it
	}
	return n, nil
}

func minus(a, b []string) []string {
	out := []string{}
	for _, v := range a {
		if !slices.Contains(b, v) {
			out = append(out, v)
		}
	}
	return out
}

// Pending is a proposal kept for review: not written, so neither
// injected nor superseding anything, until it is accepted.
type Pending struct {
	ID       string               `json:"id"`
	Model    string               `json:"model"`
	Created  string               `json:"created"`
	Proposal consolidate.Proposal `json:"proposal"`
}

func (s *Store) pendingPath() string {
	return filepath.Join(s.home, "state", "consolidate-pending.json")
}

// PendingProposals lists the proposals waiting for review on this machine.
func (s *Store) PendingProposals() ([]Pending, error) {
	data, err := os.ReadFile(s.pendingPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pending proposals: %w", err)
	}
	var out []Pending
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("read pending proposals %s: %w", s.pendingPath(), err)
	}
	return out, nil
}

func (s *Store) savePending(ps []Pending) error {
	data, err := json.MarshalIndent(ps, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.pendingPath()), 0o700); err != nil {
		return err
	}
	return note.WritePrivateFileAtomicIn(s.home, s.pendingPath(), data) // as every write of the store's files: no link below home
}

func (s *Store) addPending(props []consolidate.Proposal, model string) ([]string, error) {
	cur, err := s.PendingProposals()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, p := range props {
		data, _ := json.Marshal(p)
		sum := sha256.Sum256(data)
		id := hex.EncodeToString(sum[:4])
		if !slices.ContainsFunc(cur, func(q Pending) bool { return q.ID == id }) {
			cur = append(cur, Pending{ID: id, Model: model, Created: note.Now(s.now()), Proposal: p})
		}
		ids = append(ids, id)
	}
	return ids, s.savePending(cur)
}

// ReviewPending accepts (a run of its own, one commit) or discards the
// pending proposal id.
func (s *Store) ReviewPending(ctx context.Context, id string, accept bool) (run string, err error) {
	cur, err := s.PendingProposals()
	if err != nil {
		return "", err
	}
	i := slices.IndexFunc(cur, func(q Pending) bool { return q.ID == id })
	if i < 0 {
		return "", fmt.Errorf("no pending proposal %s (`anamnesis consolidate --review` lists them)", id)
	}
	if accept {
		if run, err = s.applyRun(ctx, []consolidate.Proposal{cur[i].Proposal}, cur[i].Model); err != nil {
			return "", err
		}
	}
	return run, s.savePending(slices.Delete(cur, i, i+1))
}

// ConsolidateBudgetPath is the state file of this machine's daily
// consolidation spending (consolidate.Budget).
func (s *Store) ConsolidateBudgetPath() string {
	return filepath.Join(s.home, "state", "consolidate-budget.json")
}

// PendingView is a pending proposal with what it would replace, for a
// reviewer to compare.
type PendingView struct {
	Pending
	Description string         `json:"description"`
	Replaces    []ReplacedNote `json:"replaces,omitempty"`
}

// ReplacedNote is a note a proposal would supersede, as it is now.
type ReplacedNote struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body"`
}

// PendingViews lists the pending proposals beside the notes they would
// replace (a note gone since is left out).
func (s *Store) PendingViews(ctx context.Context) ([]PendingView, error) {
	pend, err := s.PendingProposals()
	if err != nil {
		return nil, err
	}
	out := make([]PendingView, 0, len(pend))
	for _, p := range pend {
		v := PendingView{Pending: p, Description: DescribeProposal(p.Proposal)}
		for _, id := range p.Proposal.Supersedes {
			if n, _, err := s.Get(ctx, id); err == nil {
				v.Replaces = append(v.Replaces, ReplacedNote{ID: id, Title: n.Title, Body: n.Body})
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// SettleConsolidation settles the conflicts that two machines
// consolidating the same notes at once leave: both wrote the note of the
// same id (ids derive from the sources), with different words, and the
// sync kept one as a conflict copy. Where the note of an id in ids and
// every copy of it are a consolidation's output (prov_source reflection or
// merge), the note as merged is kept and the copies go (git history keeps
// them): two syntheses of the same sources are one note, not a choice for
// the user. It returns the ids settled.
func (s *Store) SettleConsolidation(ctx context.Context, ids []string) ([]string, error) {
	conflicts, err := s.Conflicts(ctx)
	if err != nil {
		return nil, err
	}
	var settled []string
	for _, c := range conflicts {
		if len(c.Copies) == 0 || !slices.Contains(ids, c.ID) {
			continue
		}
		ours := true
		for _, id := range append([]string{c.ID}, c.Copies...) {
			n, _, err := s.Get(ctx, id)
			if err != nil || (n.ProvSource != consolidate.ProvReflection && n.ProvSource != consolidate.ProvMerge) {
				ours = false
			}
		}
		if !ours {
			continue // not ours to decide
		}
		if _, err := s.Resolve(ctx, c.ID, Resolution{Keep: c.ID}); err != nil {
			return settled, fmt.Errorf("settle %s: %w", c.ID, err)
		}
		settled = append(settled, c.ID)
	}
	return settled, nil
}
