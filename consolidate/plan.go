package consolidate

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/note"
)

// Kinds of proposal.
const (
	KindReflect    = "reflect"    // a note distilled from session notes
	KindSynthesize = "synthesize" // a new note replacing redundant ones
	KindKeep       = "keep"       // an existing note that supersedes the rest of its group
	KindDedup      = "dedup"      // a keep for byte-identical bodies, no model
	KindReflected  = "reflected"  // session notes only tagged: the model kept nothing of them
)

// Tags and provenance written on what a plan produces; the Python tool's
// values, so it reads our notes as its own (prov_source reflection|merge).
const (
	TagReflected   = "reflected"
	TagReflection  = "reflection"
	TagMerge       = "merge"
	TagMerged      = "merged"
	ProvReflection = "reflection"
	ProvMerge      = "merge"
	// Confidence of a model-written note, as in the Python tool.
	Confidence = 0.6
)

// Thresholds, the Python tool's defaults.
const (
	MinEpisodics = 5 // unreflected session notes before a project is reflected
	MinDurable   = 5 // durable notes before a project is merged
)

// Proposal is one change a plan would make. New notes (reflect,
// synthesize) carry an id derived from their sources and place, so two
// machines that distil the same notes write the same files rather than two
// sets of notes.
type Proposal struct {
	Kind       string   `json:"kind"`
	Project    string   `json:"project"`
	ID         string   `json:"id"` // the new note's, or the keeper's
	Type       string   `json:"type,omitempty"`
	Title      string   `json:"title,omitempty"`
	Body       string   `json:"body,omitempty"`
	Supersedes []string `json:"supersedes,omitempty"`
	// Reflected are session notes to tag `reflected`.
	Reflected []string `json:"reflected,omitempty"`
}

// Plan is what one run would do, and what it cost to find out.
type Plan struct {
	Model     string     `json:"model,omitempty"`
	Proposals []Proposal `json:"proposals"`
	Calls     int        `json:"calls"`
	Chars     int        `json:"input_chars"`
	USD       float64    `json:"usd"`
	// Stopped says why planning stopped early (a budget); Failed lists
	// projects whose reply could not be used.
	Stopped string   `json:"stopped,omitempty"`
	Failed  []string `json:"failed,omitempty"`
}

// Planner asks a model about a project's notes within a budget.
type Planner struct {
	Model  Model // nil: dedup only
	Budget *Budget
	// MaxChars bounds one call's input (the Python tool: max_tokens*4).
	MaxChars     int
	MinEpisodics int
	MinDurable   int
}

// Project plans one project. notes are its live notes (superseded ones
// left out by the caller), portable only.
func (p *Planner) Project(ctx context.Context, project string, notes []*note.Note, plan *Plan) error {
	dups := Dedup(project, notes)
	plan.Proposals = append(plan.Proposals, dups...)
	if p.Model == nil || plan.Stopped != "" {
		return nil
	}
	plan.Model = p.Model.Name()
	hidden := map[string]bool{} // a duplicate is not sent again
	for _, d := range dups {
		for _, id := range d.Supersedes {
			hidden[id] = true
		}
	}
	var eps, durable []*note.Note
	for _, n := range notes {
		switch {
		case hidden[n.ID]:
		case n.Type == note.TypeEpisodic && !slices.Contains(n.Tags, TagReflected):
			eps = append(eps, n)
		case n.Type != note.TypeEpisodic:
			durable = append(durable, n)
		}
	}
	if len(eps) >= cmp.Or(p.MinEpisodics, MinEpisodics) {
		if err := p.reflect(ctx, project, eps, plan); err != nil {
			return err
		}
	}
	if plan.Stopped == "" && len(durable) >= cmp.Or(p.MinDurable, MinDurable) {
		if err := p.merge(ctx, project, durable, plan); err != nil {
			return err
		}
	}
	return nil
}

// call makes one budgeted call. A budget refusal stops the plan (not an
// error: what was planned so far stands); a failed reply marks the
// project failed and the run goes on, as in the Python tool.
func (p *Planner) call(ctx context.Context, project string, req Request, plan *Plan) (string, bool, error) {
	chars := len(req.System) + len(req.User)
	if err := p.Budget.Allow(chars); err != nil {
		if errors.Is(err, ErrBudget) {
			plan.Stopped = err.Error()
			return "", false, nil
		}
		return "", false, err
	}
	reply, err := p.Model.Complete(ctx, req)
	plan.Calls++
	plan.Chars += chars
	plan.USD += reply.CostUSD
	if rerr := p.Budget.Record(chars, reply.CostUSD); rerr != nil {
		return "", false, rerr
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", false, ctx.Err()
		}
		plan.Failed = append(plan.Failed, fmt.Sprintf("%s: %v", project, err))
		return "", false, nil
	}
	return reply.Text, true, nil
}

func (p *Planner) reflect(ctx context.Context, project string, eps []*note.Note, plan *Plan) error {
	var b strings.Builder
	ids := make([]string, len(eps))
	for i, n := range eps {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "## %s\n%s", n.Title, n.Body)
		ids[i] = n.ID
	}
	req := Request{System: ReflectSystemPrompt, User: window(claudecode.Redact(b.String()), p.maxChars()), Schema: reflectSchema}
	text, ok, err := p.call(ctx, project, req, plan)
	if !ok || err != nil {
		return err
	}
	notes, err := ParseReflection(text)
	if err != nil {
		plan.Failed = append(plan.Failed, fmt.Sprintf("%s: %v", project, err))
		return nil
	}
	slices.Sort(ids)
	if len(notes) == 0 {
		plan.Proposals = append(plan.Proposals, Proposal{Kind: KindReflected, Project: project, Reflected: ids})
		return nil
	}
	for i, d := range notes {
		// Each carries the tagging, so the sources are tagged whichever of
		// them the recall gate lets through.
		plan.Proposals = append(plan.Proposals, Proposal{Kind: KindReflect, Project: project, ID: StableID(KindReflect, ids, i),
			Type: d.Type, Title: d.Title, Body: d.Body, Supersedes: ids, Reflected: ids})
	}
	return nil
}

func (p *Planner) merge(ctx context.Context, project string, durable []*note.Note, plan *Plan) error {
	// The Python tool's order: procedural, then semantic, each newest first.
	durable = slices.Clone(durable)
	slices.SortStableFunc(durable, func(a, b *note.Note) int {
		if a.Type != b.Type {
			return cmp.Compare(a.Type, b.Type) // procedural < semantic
		}
		return cmp.Compare(b.CreatedAt, a.CreatedAt)
	})
	var b strings.Builder
	valid := map[string]bool{}
	for i, n := range durable {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "## [%s] [%s] %s\n%s", n.ID, n.Type, n.Title, n.Body)
		valid[n.ID] = true
	}
	req := Request{System: MergeSystemPrompt, User: window(claudecode.Redact(b.String()), p.maxChars()), Schema: mergeSchema}
	text, ok, err := p.call(ctx, project, req, plan)
	if !ok || err != nil {
		return err
	}
	groups, err := ParseMerge(text, valid)
	if err != nil {
		plan.Failed = append(plan.Failed, fmt.Sprintf("%s: %v", project, err))
		return nil
	}
	for _, g := range groups {
		ids := slices.Clone(g.SupersededIDs)
		slices.Sort(ids)
		if g.Action == "keep" {
			plan.Proposals = append(plan.Proposals, Proposal{Kind: KindKeep, Project: project, ID: g.KeeperID, Supersedes: ids})
			continue
		}
		plan.Proposals = append(plan.Proposals, Proposal{Kind: KindSynthesize, Project: project, ID: StableID(KindSynthesize, ids, 0),
			Type: g.Type, Title: g.Title, Body: g.Body, Supersedes: ids})
	}
	return nil
}

func (p *Planner) maxChars() int {
	if p.MaxChars > 0 {
		return p.MaxChars
	}
	return 480_000
}

// Dedup groups notes whose bodies are the same once trimmed (the Python
// tool's dedup, within a project) and proposes the oldest as the keeper
// of each group. Nothing is removed: the rest are superseded.
func Dedup(project string, notes []*note.Note) []Proposal {
	groups := map[[32]byte][]*note.Note{}
	var order [][32]byte
	for _, n := range notes {
		k := sha256.Sum256([]byte(strings.TrimSpace(n.Body)))
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], n)
	}
	var out []Proposal
	for _, k := range order {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		keeper := slices.MinFunc(g, func(a, b *note.Note) int {
			return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
		var rest []string
		for _, n := range g {
			if n != keeper {
				rest = append(rest, n.ID)
			}
		}
		slices.Sort(rest)
		out = append(out, Proposal{Kind: KindDedup, Project: project, ID: keeper.ID, Supersedes: rest})
	}
	return out
}

// StableID is a new note's id from what it came from: the same sources
// and place give the same id on every machine.
func StableID(kind string, sources []string, i int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("anamnesis-consolidate\x00%s\x00%s\x00%d", kind, strings.Join(sources, ","), i)))
	return note.IDFromHash(sum[:])
}

// window is the Python tool's _window: a text over max keeps its first 60%
// and its end, with a marker between.
func window(text string, max int) string {
	if len(text) <= max {
		return text
	}
	head := max * 6 / 10
	tail := max - head
	return strings.ToValidUTF8(text[:head], "") + "\n\n...[transcript truncated for length]...\n\n" + strings.ToValidUTF8(text[len(text)-tail:], "")
}
