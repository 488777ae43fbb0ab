package anamnesis

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
)

// DistinctiveFraction is the relevance floor of per-prompt recall: a note
// is recalled only if it shares with the prompt a word that at most this
// fraction of notes contain. A fixed bm25 score cannot serve (scores grow
// with the store); CONTRIBUTING.md has the measurements behind the value.
const DistinctiveFraction = 0.02

// maxGlobal bounds how many global notes Inject considers; a hook's
// character budget admits far fewer.
const maxGlobal = 200

// maxEpisodic is how many recent session notes Inject includes.
const maxEpisodic = 2

// Inject selects the notes a session of project starts with, in the
// order they should fill its budget: the project's durable notes
// (procedural, semantic; newest first, then higher confidence; at most k),
// then its last one or two session notes not yet reflected, then global
// notes (newest first, at most maxGlobal). Global notes come last so that
// a store with many of them never crowds out the project's own. The
// totals count every live note of the project and of global memory, so a
// caller can say what it left out. Superseded notes are never selected.
func (s *Store) Inject(ctx context.Context, project string, k int) (notes []index.Hit, projectTotal, globalTotal int, err error) {
	list := func(f index.Filter) ([]index.Hit, error) {
		return guarded(ctx, s, func() ([]index.Hit, error) { return s.idx().List(ctx, f) })
	}
	count := func(f index.Filter) (int, error) {
		return guarded(ctx, s, func() (int, error) { return s.idx().Count(ctx, f) })
	}
	var native []index.Hit // the other machines' Claude Code memories of the project
	if project != note.DefaultProject {
		if projectTotal, err = count(index.Filter{Project: project, Live: true}); err != nil {
			return nil, 0, 0, err
		}
		durable, err := list(index.Filter{Project: project, Types: []string{note.TypeProcedural, note.TypeSemantic}, Live: true, Limit: k})
		if err != nil {
			return nil, 0, 0, err
		}
		// List is newest first; among equal times, higher confidence first.
		slices.SortStableFunc(durable, func(a, b index.Hit) int {
			if a.UpdatedAt != b.UpdatedAt {
				return 0
			}
			return cmp.Compare(b.Confidence, a.Confidence)
		})
		// Claude Code's own memories: this machine's Claude already has
		// its own (Claude Code loads them); the other machines' come in a
		// block of their own after the project's notes.
		durable = slices.DeleteFunc(durable, func(h index.Hit) bool {
			if h.ProvSource != NativeSource {
				return false
			}
			if h.MachineID != s.machineID {
				native = append(native, h)
			}
			return true
		})
		notes = append(notes, durable...)
		recent, err := list(index.Filter{Project: project, Type: note.TypeEpisodic, Live: true, Limit: 20})
		if err != nil {
			return nil, 0, 0, err
		}
		n := 0
		for _, h := range recent {
			if n < maxEpisodic && !slices.Contains(h.Tags, "reflected") {
				notes = append(notes, h)
				n++
			}
		}
	}
	if globalTotal, err = count(index.Filter{Project: note.DefaultProject, Live: true}); err != nil {
		return nil, 0, 0, err
	}
	global, err := list(index.Filter{Project: note.DefaultProject, Live: true, Limit: maxGlobal})
	if err != nil {
		return nil, 0, 0, err
	}
	global = slices.DeleteFunc(global, func(h index.Hit) bool { return h.ProvSource == NativeSource && h.MachineID == s.machineID })
	notes = append(notes, native...)
	if notes, err = s.pairConflicts(ctx, append(notes, global...)); err != nil {
		return nil, 0, 0, err
	}
	// Two live versions of one fact are marked until one supersedes the
	// other: the model must not take either for settled.
	MarkSameFact(notes)
	return notes, projectTotal, globalTotal, nil
}

// Recall returns up to limit notes relevant to a prompt, searching only
// its distinctive words (see DistinctiveFraction; in a small store a word
// in up to three notes counts): a prompt that shares no uncommon word with
// any note recalls nothing, so chit-chat adds nothing to Claude's
// context. Durable notes come before session notes.
//
// With an embedder, the prompt is embedded while BM25 runs (and the
// vectors are read meanwhile); if the embedding comes back within the
// recall timeout, notes at least the recall cosine close to the prompt
// are fused with the BM25 hits by reciprocal rank. A slow, dead or wrong
// embedder leaves recall to BM25, silently: this runs in a hook.
func (s *Store) Recall(ctx context.Context, prompt string, limit int) ([]index.Hit, error) {
	if strings.TrimSpace(prompt) == "" {
		return nil, nil
	}
	var semantic chan []index.Hit
	var budget <-chan struct{}
	if s.embedder != nil {
		// The whole leg (the embedding, reading the vectors, the scan) has
		// the budget: the first search of a process reads every vector,
		// which at 100,000 notes takes longer than a prompt may wait.
		vctx, cancel := context.WithTimeout(ctx, s.recallTimeout)
		defer cancel()
		budget = vctx.Done()
		semantic = make(chan []index.Hit, 1)
		ix := s.idx() // read here: a repair of a damaged index may replace it meanwhile
		go func() { semantic <- s.recallByVector(vctx, ix, prompt, limit) }()
	}
	hits, err := s.recallByWords(ctx, prompt, limit)
	if err != nil {
		return nil, err
	}
	var vec []index.Hit
	if semantic != nil {
		select {
		case vec = <-semantic:
		case <-budget: // a read that does not stop at once when cancelled is not waited for
		}
	}
	if len(vec) > 0 {
		cos := make([]float64, len(vec))
		for i, h := range vec {
			cos[i] = h.Cosine
		}
		hits = fuse(hits, vec, cos, 1, 1)
		if len(hits) > limit {
			hits = hits[:limit]
		}
		if hits, err = s.pairConflicts(ctx, hits); err != nil {
			return nil, err
		}
	}
	// What a prompt recalls is read as a whole: durable notes first, then
	// session notes, which often only repeat an earlier question.
	slices.SortStableFunc(hits, func(a, b index.Hit) int {
		return cmp.Compare(b2i(a.Type == note.TypeEpisodic), b2i(b.Type == note.TypeEpisodic))
	})
	return hits, nil
}

// recallByWords is prompt recall's BM25 leg: the distinctive words only.
func (s *Store) recallByWords(ctx context.Context, prompt string, limit int) ([]index.Hit, error) {
	words, err := guarded(ctx, s, func() ([]string, error) {
		return s.idx().DistinctiveWords(ctx, prompt, DistinctiveFraction)
	})
	if err != nil || len(words) == 0 {
		return nil, err
	}
	return s.Search(ctx, strings.Join(words, " "), index.Filter{Limit: limit})
}

// recallByVector is prompt recall's semantic leg: the notes at least
// recallCosine close to the prompt, best first, each with its cosine;
// nothing when ctx (the recall budget) ends first or anything fails. The model's vectors are read from the index while the
// embedder works, so a hook pays the longer of the two, not their sum.
// It runs beside the BM25 leg, so it leaves damage to that leg's guard
// (which may repair the index) and only reads ix.
func (s *Store) recallByVector(ctx context.Context, ix *index.Index, prompt string, limit int) []index.Hit {
	model := s.embedder.Model()
	warm := make(chan struct{})
	go func() {
		defer close(warm)
		_ = ix.WarmVectors(ctx, model) // an error shows again below
	}()
	q, err := s.embedQuery(ctx, prompt, 0)
	<-warm
	if err != nil {
		return nil
	}
	hits, cos, err := ix.NearestVectors(ctx, model, q, index.Filter{Limit: limit}, limit)
	if err != nil {
		return nil
	}
	var out []index.Hit
	for i, h := range hits {
		if cos[i] < s.recallCosine {
			break // best first: the rest are further
		}
		h.Cosine = cos[i]
		out = append(out, h)
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// SaveSession writes the episodic note of a Claude Code session
// (n.ProvSession names it), or updates the note an earlier capture of the
// same session wrote (a PreCompact followed by SessionEnd): its title,
// body and project are replaced and n's tags added. Only Type, Title,
// Body, Project, Tags, ProvSource and ProvSession of n are used.
func (s *Store) SaveSession(ctx context.Context, n *note.Note) (id, path string, updated bool, err error) {
	if n.ProvSession != "" {
		prevID, err := guarded(ctx, s, func() (string, error) { return s.idx().FindSession(ctx, n.ProvSession) })
		if err != nil {
			return "", "", false, err
		}
		if prevID != "" {
			// A note indexed but gone from disk is written anew below.
			if prev, _, err := s.Get(ctx, prevID); err == nil {
				prev.Title, prev.Body, prev.Project = n.Title, n.Body, n.Project
				for _, t := range n.Tags {
					if !slices.Contains(prev.Tags, t) {
						prev.Tags = append(prev.Tags, t)
					}
				}
				path, err := s.Update(ctx, prev)
				if err != nil {
					return "", "", false, err
				}
				return prevID, path, true, nil
			}
		}
	}
	w, path, err := s.Write(ctx, WriteRequest{
		Type: n.Type, Title: n.Title, Body: n.Body, Project: n.Project, Tags: n.Tags,
		ProvSource: n.ProvSource, ProvSession: n.ProvSession,
	})
	if err != nil {
		return "", "", false, err
	}
	return w.ID, path, false, nil
}

// Arrived returns the live notes of project that arrived from other
// machines (merged in by a sync) after since, newest first: a session that
// started before a background sync brought them is shown them with its
// next prompt.
func (s *Store) Arrived(ctx context.Context, project string, since time.Time) ([]index.Hit, error) {
	arrived, err := guarded(ctx, s, func() ([]index.Hit, error) {
		return s.idx().List(ctx, index.Filter{Project: project, Live: true, ArrivedAfter: since.UnixNano(), Limit: maxArrived})
	})
	if err != nil {
		return nil, err
	}
	// A conflict copy follows its note, so the hook can tell a conflict
	// settled elsewhere from one still open.
	return s.pairConflicts(ctx, arrived)
}

// maxArrived bounds the notes one prompt is shown as arrived; the budget
// admits fewer.
const maxArrived = 20
