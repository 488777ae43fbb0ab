package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/eval"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/locomo"
	"github.com/anamnesis-memory/anamnesis/note"
)

// RecallFigures are LoCoMo retrieval scores (bench-protocol.md §2–§3,
// original answer key, flat index of all sessions, top 10).
type RecallFigures struct {
	Sessions, Questions int
	Headline            *eval.Report // categories 1–4
	Adversarial         *eval.Report // category 5
	All                 *eval.Report
	GrepHeadline        *eval.Report
	GrepAdversarial     *eval.Report
}

// RunLoCoMo converts the conversations in dir, indexes them in a fresh
// store under work, and scores anamnesis search and the grep baseline.
// With emb, the store embeds every session first (the semantic leg).
func RunLoCoMo(ctx context.Context, dir, work string, emb anamnesis.Embedder, search func(*anamnesis.Store) eval.Searcher) (RecallFigures, error) {
	var f RecallFigures
	sessions, questions, err := locomo.Load(dir)
	if err != nil {
		return f, err
	}
	f.Sessions, f.Questions = len(sessions), len(questions)
	home := filepath.Join(work, "locomo-store")
	os.RemoveAll(home)
	tree := note.Tree{Root: filepath.Join(home, note.PortableDir), Scope: note.ScopePortable}
	when := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range sessions {
		n := note.New(note.TypeSemantic, s.Title, s.Body, when)
		n.ID, n.Project, n.MachineID = s.ID, "locomo", "bench"
		if _, err := tree.Write(n); err != nil {
			return f, err
		}
	}
	st, err := anamnesis.Open(ctx, home, anamnesis.Options{MachineID: "bench", Embedder: emb})
	if err != nil {
		return f, err
	}
	defer st.Close()
	if emb != nil {
		if _, err := st.EmbedPending(ctx); err != nil {
			return f, err
		}
	}
	var head, adv, all []eval.Case
	for _, q := range questions {
		all = append(all, q.Case)
		if q.Category == 5 {
			adv = append(adv, q.Case)
		} else {
			head = append(head, q.Case)
		}
	}
	ks := []int{1, 3, 5, 10}
	s := search(st)
	if f.Headline, err = eval.Run(ctx, head, ks, s); err != nil {
		return f, err
	}
	if f.Adversarial, err = eval.Run(ctx, adv, ks, s); err != nil {
		return f, err
	}
	if f.All, err = eval.Run(ctx, all, ks, s); err != nil {
		return f, err
	}
	byID := map[string]locomo.Session{}
	for _, x := range sessions {
		byID[x.ID] = x
	}
	grep := func(_ context.Context, q string, k int) ([]eval.Hit, error) {
		var hits []eval.Hit
		for _, id := range locomo.Grep(sessions, q, k) {
			hits = append(hits, eval.Hit{ID: id, Text: byID[id].Title + "\n" + byID[id].Body})
		}
		return hits, nil
	}
	if f.GrepHeadline, err = eval.Run(ctx, head, ks, grep); err != nil {
		return f, err
	}
	if f.GrepAdversarial, err = eval.Run(ctx, adv, ks, grep); err != nil {
		return f, err
	}
	return f, nil
}

// StoreSearch is anamnesis's own search as eval sees it: BM25.
func StoreSearch(st *anamnesis.Store) eval.Searcher { return ModeSearch(anamnesis.ModeFTS)(st) }

// ModeSearch is anamnesis's search in mode (fts, vec, hybrid) as eval
// sees it. A query the embedder cannot take fails the run: a figure must
// say which ranking it measured.
func ModeSearch(mode string) func(*anamnesis.Store) eval.Searcher {
	return func(st *anamnesis.Store) eval.Searcher {
		return func(ctx context.Context, q string, k int) ([]eval.Hit, error) {
			hits, degraded, err := st.SearchMode(ctx, q, index.Filter{Limit: k}, mode)
			if err == nil && degraded != nil {
				err = degraded
			}
			if err != nil {
				return nil, err
			}
			return evalHits(hits), nil
		}
	}
}

func evalHits(hits []anamnesis.Hit) []eval.Hit {
	out := make([]eval.Hit, len(hits))
	for i, h := range hits {
		out[i] = eval.Hit{ID: h.ID, Text: h.Title + "\n" + h.Body}
	}
	return out
}

// FormatRecall renders the LoCoMo table.
func FormatRecall(f RecallFigures) string {
	row := func(name string, r *eval.Report) string {
		return fmt.Sprintf("%-44s %5d  %.3f  %.3f  %.3f  %8.2f ms  %6.0f", name, r.Cases, r.Recall["5"], r.Recall["10"], r.MRR, r.MeanLatency, r.Tokens["5"])
	}
	out := fmt.Sprintf("LoCoMo: %d session notes, %d questions (original answer key, flat index, top 10)\n", f.Sessions, f.Questions)
	out += fmt.Sprintf("%-44s %5s  %5s  %5s  %5s  %11s  %6s\n", "system / query set", "n", "R@5", "R@10", "MRR", "mean lat", "tok@5")
	out += row("anamnesis search, categories 1-4", f.Headline) + "\n"
	for _, c := range []string{"category 1", "category 2", "category 3", "category 4"} {
		if g := f.Headline.Groups[c]; g != nil {
			out += row("  "+c, g) + "\n"
		}
	}
	out += row("anamnesis search, category 5 (adversarial)", f.Adversarial) + "\n"
	out += row("anamnesis search, all questions", f.All) + "\n"
	out += row("grep baseline, categories 1-4", f.GrepHeadline) + "\n"
	out += row("grep baseline, category 5", f.GrepAdversarial) + "\n"
	out += "published basic-memory (hybrid, q300 slice of 1-4, corrected key): R@5 0.774  R@10 0.875  MRR 0.697\n"
	return out
}
