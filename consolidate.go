package anamnesis

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/anamnesis-memory/anamnesis/consolidate"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
)

// ConsolidateOptions say what one consolidation run does.
type ConsolidateOptions struct {
	Project string // "" : every project with portable notes
	Planner *consolidate.Planner
	// Apply writes the plan (one commit); without it the run only plans.
	Apply bool
	// Review keeps the proposals pending (see Pending) instead of applying
	// them.
	Review bool
	// NoGate applies without the recall check.
	NoGate bool
	// GateCases is the number of self-eval queries of the gate (0: 40);
	// GateK its k (0: 8, the Python tool's).
	GateCases, GateK int
}

// ConsolidateReport is what a run planned, applied and measured.
type ConsolidateReport struct {
	Plan     consolidate.Plan       `json:"plan"`
	Applied  []consolidate.Proposal `json:"applied,omitempty"`
	Rejected []consolidate.Proposal `json:"rejected,omitempty"`
	// Recall@GateK of the store's own questions before and after the
	// accepted proposals (both 0 when the gate did not run).
	GateK        int     `json:"gate_k,omitempty"`
	GateCases    int     `json:"gate_cases,omitempty"`
	RecallBefore float64 `json:"recall_before"`
	RecallAfter  float64 `json:"recall_after"`
	// Run is the commit of an applied run.
	Run     string   `json:"run,omitempty"`
	Pending []string `json:"pending,omitempty"`
}

// NoModel labels a run that needed no model (dedup alone).
const NoModel = "no model (dedup)"

// consolidateSubject starts the message of every run's commit; --log
// finds runs by it.
const (
	consolidateSubject = "anamnesis: consolidate"
	undoSubject        = "anamnesis: undo consolidate "
	runTrailer         = "Consolidate-Model: "
)

// Consolidate plans (and with Apply, applies) reflect, merge and dedup
// over the live portable notes. Nothing is deleted: new notes supersede
// their sources, and sources are only tagged.
func (s *Store) Consolidate(ctx context.Context, opts ConsolidateOptions) (ConsolidateReport, error) {
	var rep ConsolidateReport
	if opts.Planner == nil {
		return rep, errors.New("consolidate: no planner")
	}
	byProject, err := s.liveByProject(ctx, opts.Project)
	if err != nil {
		return rep, err
	}
	projects := make([]string, 0, len(byProject))
	for p := range byProject {
		projects = append(projects, p)
	}
	sort.Strings(projects)
	for _, p := range projects {
		if err := opts.Planner.Project(ctx, p, byProject[p], &rep.Plan); err != nil {
			return rep, fmt.Errorf("consolidate %s: %w", p, err)
		}
	}
	if !opts.Apply && !opts.Review || len(rep.Plan.Proposals) == 0 {
		return rep, nil
	}
	accepted := rep.Plan.Proposals
	if !opts.NoGate {
		accepted, err = s.gate(ctx, opts, &rep)
		if err != nil {
			return rep, err
		}
	}
	if len(accepted) == 0 {
		return rep, nil
	}
	if rep.Plan.Model == "" {
		rep.Plan.Model = NoModel
	}
	if opts.Review {
		rep.Pending, err = s.addPending(accepted, rep.Plan.Model)
		return rep, err
	}
	run, err := s.applyRun(ctx, accepted, rep.Plan.Model)
	if err != nil {
		return rep, err
	}
	rep.Applied, rep.Run = accepted, run
	return rep, nil
}

// liveByProject reads the live portable notes, conflict copies left out
// (they wait for a person's decision).
func (s *Store) liveByProject(ctx context.Context, project string) (map[string][]*note.Note, error) {
	hits, err := guarded(ctx, s, func() ([]index.Hit, error) {
		return s.idx().List(ctx, index.Filter{Live: true, Scope: note.ScopePortable, Project: project})
	})
	if err != nil {
		return nil, fmt.Errorf("list notes to consolidate: %w", err)
	}
	out := map[string][]*note.Note{}
	for _, h := range hits {
		if h.ConflictOf != "" {
			continue
		}
		n := h.Note
		out[n.Project] = append(out[n.Project], &n)
	}
	return out, nil
}

// staged is one file a proposal wrote: its bytes before (nil: new).
type staged struct {
	rel string // memory/-relative
	old []byte
}

// stage writes one proposal into memory/ and the index, without
// committing. A new note whose id is already taken (another machine
// distilled the same sources) is not written again.
func (s *Store) stage(ctx context.Context, p consolidate.Proposal, model string) ([]staged, error) {
	var out []staged
	switch p.Kind {
	case consolidate.KindReflect, consolidate.KindSynthesize:
		if !s.noteFileExists(p.ID) {
			n := note.New(p.Type, p.Title, p.Body, s.now())
			n.ID, n.Project, n.MachineID = p.ID, p.Project, s.machineID
			n.Tags, n.ProvSource = []string{consolidate.TagReflection}, consolidate.ProvReflection
			if p.Kind == consolidate.KindSynthesize {
				n.Tags, n.ProvSource = []string{consolidate.TagMerge}, consolidate.ProvMerge
			}
			n.ProvModel, n.Confidence, n.Supersedes = model, consolidate.Confidence, slices.Clone(p.Supersedes)
			if err := n.Validate(); err != nil {
				return nil, fmt.Errorf("proposal %q: %w", p.Title, err)
			}
			rel, err := s.memory.Write(n)
			if err != nil {
				return nil, err
			}
			out = append(out, staged{rel: rel})
		}
	case consolidate.KindKeep, consolidate.KindDedup:
		st, err := s.editNote(ctx, p.ID, func(n *note.Note) {
			n.Supersedes = union(n.Supersedes, p.Supersedes)
			n.Tags = union(n.Tags, []string{consolidate.TagMerged})
			n.UpdatedAt = note.Now(s.now())
		})
		if err != nil {
			return out, err
		}
		out = append(out, st)
	}
	for _, id := range p.Reflected {
		st, err := s.editNote(ctx, id, func(n *note.Note) { n.Tags = union(n.Tags, []string{consolidate.TagReflected}) })
		if err != nil {
			return out, err
		}
		out = append(out, st)
	}
	return out, s.indexStaged(ctx, out, nil)
}

func (s *Store) editNote(ctx context.Context, id string, edit func(*note.Note)) (staged, error) {
	h, err := guarded(ctx, s, func() (index.Hit, error) { return s.idx().Get(ctx, id) })
	if err != nil {
		return staged{}, fmt.Errorf("note %s: %w", id, err)
	}
	scope, rel, _ := note.SplitHomePath(h.Path)
	if scope != note.ScopePortable {
		return staged{}, fmt.Errorf("note %s is machine-local", id)
	}
	data, _, err := s.memory.ReadFile(rel)
	if err != nil {
		return staged{}, fmt.Errorf("read note %s: %w", id, err)
	}
	n, err := note.Parse(data)
	if err != nil {
		return staged{}, fmt.Errorf("read note %s: %w", id, err)
	}
	edit(n)
	if err := s.memory.WriteFile(rel, note.Marshal(n)); err != nil {
		return staged{}, err
	}
	return staged{rel: rel, old: data}, nil
}

// indexStaged brings the index up to the staged files; deleted lists
// files removed.
func (s *Store) indexStaged(ctx context.Context, files []staged, deleted []string) error {
	var chs []index.Change
	for _, f := range files {
		chs = append(chs, s.readChange(s.memory, f.rel))
	}
	for _, rel := range deleted {
		chs = append(chs, index.Change{File: index.File{Path: note.TreeDir(note.ScopePortable) + "/" + rel}, Delete: true})
	}
	return s.guard(ctx, func() error {
		_, err := s.idx().Apply(ctx, chs)
		return err
	})
}

// unstage puts back what stage wrote.
func (s *Store) unstage(ctx context.Context, files []staged) error {
	var back []staged
	var gone []string
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		if f.old == nil {
			if err := s.memory.Remove(f.rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			gone = append(gone, f.rel)
			continue
		}
		if err := s.memory.WriteFile(f.rel, f.old); err != nil {
			return err
		}
		back = append(back, f)
	}
	return s.indexStaged(ctx, back, gone)
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, v := range b {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// applyRun stages every proposal and commits them as one run.
func (s *Store) applyRun(ctx context.Context, props []consolidate.Proposal, model string) (string, error) {
	if err := s.writable("consolidate"); err != nil {
		return "", err
	}
	var all []staged
	for _, p := range props {
		st, err := s.stage(ctx, p, model)
		all = append(all, st...)
		if err != nil {
			if uerr := s.unstage(ctx, all); uerr != nil {
				return "", errors.Join(err, uerr)
			}
			return "", err
		}
	}
	rels := make([]string, 0, len(all))
	for _, f := range all {
		if !slices.Contains(rels, f.rel) {
			rels = append(rels, f.rel)
		}
	}
	head, err := s.commitNotesMessage(ctx, rels, true, s.runMessage(props, model))
	if err != nil {
		return "", fmt.Errorf("commit the consolidation: %w", err)
	}
	return head.String(), nil
}

func (s *Store) runMessage(props []consolidate.Proposal, model string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s by %s on %s at %s\n\n", consolidateSubject, model, s.machineID, note.Now(s.now()))
	for _, p := range props {
		b.WriteString(DescribeProposal(p) + "\n")
	}
	fmt.Fprintf(&b, "\n%s%s\n", runTrailer, model)
	return b.String()
}

// DescribeProposal is one line saying what a proposal does.
func DescribeProposal(p consolidate.Proposal) string {
	switch p.Kind {
	case consolidate.KindReflect:
		return fmt.Sprintf("reflect %s: %q (%s) from %d session note(s)", p.Project, p.Title, p.ID, len(p.Supersedes))
	case consolidate.KindSynthesize:
		return fmt.Sprintf("merge %s: synthesize %q (%s) from %s", p.Project, p.Title, p.ID, strings.Join(p.Supersedes, " "))
	case consolidate.KindKeep:
		return fmt.Sprintf("merge %s: keep %s, supersedes %s", p.Project, p.ID, strings.Join(p.Supersedes, " "))
	case consolidate.KindDedup:
		return fmt.Sprintf("dedup %s: keep %s, supersedes %s", p.Project, p.ID, strings.Join(p.Supersedes, " "))
	case consolidate.KindReflected:
		return fmt.Sprintf("reflect %s: nothing durable in %d session note(s); tagged reflected", p.Project, len(p.Reflected))
	}
	return p.Kind
}

// gate applies the proposals one by one to a copy of the store and keeps
// each only if recall@k on the store's own questions does not drop (the
// Python tool's select_safe_groups).
func (s *Store) gate(ctx context.Context, opts ConsolidateOptions, rep *ConsolidateReport) ([]consolidate.Proposal, error) {
	n := opts.GateCases
	if n <= 0 {
		n = 40
	}
	k := opts.GateK
	if k <= 0 {
		k = 8
	}
	cases, err := s.SelfCases(ctx, n, 1)
	if err != nil {
		return nil, fmt.Errorf("build the recall gate's questions: %w", err)
	}
	rep.GateK, rep.GateCases = k, len(cases)
	if len(cases) == 0 {
		return rep.Plan.Proposals, nil
	}
	dir, err := os.MkdirTemp("", "anamnesis-gate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := copyNotes(s.memory.Root, filepath.Join(dir, note.TreeDir(note.ScopePortable))); err != nil {
		return nil, fmt.Errorf("copy the store for the recall gate: %w", err)
	}
	sb, err := Open(ctx, dir, Options{Create: true, MachineID: s.machineID, Now: s.now})
	if err != nil {
		return nil, fmt.Errorf("open the recall gate's copy: %w", err)
	}
	defer sb.Close()
	recall := func() (float64, error) {
		r, err := sb.Evaluate(ctx, cases, []int{k}, "fts")
		if err != nil {
			return 0, err
		}
		return r.Recall[strconv.Itoa(k)], nil
	}
	cur, err := recall()
	if err != nil {
		return nil, fmt.Errorf("recall gate: %w", err)
	}
	rep.RecallBefore = cur
	var ok []consolidate.Proposal
	for _, p := range rep.Plan.Proposals {
		st, err := sb.stage(ctx, p, rep.Plan.Model)
		if err != nil {
			sb.unstage(ctx, st)
			rep.Rejected = append(rep.Rejected, p)
			continue
		}
		after, err := recall()
		if err != nil {
			return nil, fmt.Errorf("recall gate: %w", err)
		}
		if after+1e-9 < cur {
			if err := sb.unstage(ctx, st); err != nil {
				return nil, err
			}
			rep.Rejected = append(rep.Rejected, p)
			continue
		}
		cur = after
		ok = append(ok, p)
	}
	rep.RecallAfter = cur
	return ok, nil
}

// copyNotes copies the note files of a memory/ tree (no .git).
func copyNotes(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(p, ".md") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
}
