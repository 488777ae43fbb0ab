package anamnesis

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"unicode"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
)

// Title similarity finds contradictions: a fact rewritten without
// supersedes ("Widget deploys with Fly.io", later "Widget deploys with
// Render") leaves two live notes whose titles share most of their words.
const (
	// SameFactSimilarity is the title similarity (the Dice coefficient of the
	// titles' content words, titleWords) at
	// which two live durable notes of one project are marked as looking
	// like two versions of one fact. The two Widget titles above score
	// 0.57. Two content words must be shared too (sameFact).
	SameFactSimilarity = 0.5
	// similarFloor is the least similarity a note needs to be offered
	// after a write as one the new note may replace: the model reads
	// them and decides, so it is lower than SameFactSimilarity.
	similarFloor = 0.3
	// similarCandidates is how many notes a write's title search reads.
	similarCandidates = 20
)

// SimilarNote is a live note of the written note's project whose title is
// close to the new one's (Store.Similar).
type SimilarNote struct {
	ID         string  `json:"id"`
	Title      string  `json:"title"`
	Similarity float64 `json:"similarity"`
}

// titleWords are a title's content words: lower case, function words
// (index.IsStopword) dropped, a plural's s trimmed.
func titleWords(title string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(title), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
		if index.IsStopword(w) {
			continue
		}
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		out[w] = true
	}
	return out
}

func dice(a, b map[string]bool) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	return 2 * float64(sharedWords(a, b)) / float64(len(a)+len(b))
}

// sharedWords is how many words a and b have in common.
func sharedWords(a, b map[string]bool) int {
	n := 0
	for w := range a {
		if b[w] {
			n++
		}
	}
	return n
}

// sameFact: titles SameFactSimilarity alike that share at least two
// content words; two-word titles that share one ("first fact", "second
// fact") are too little to go on. It returns their similarity too.
func sameFact(a, b map[string]bool) (float64, bool) {
	if sharedWords(a, b) < 2 {
		return 0, false
	}
	d := dice(a, b)
	return d, d >= SameFactSimilarity
}

// sameFactCandidate: only durable notes, not conflict copies, state facts
// that can contradict each other; session notes repeat on purpose.
func sameFactCandidate(h index.Hit) bool {
	_, isCopy := h.ConflictCopyOf()
	return !isCopy && (h.Type == note.TypeSemantic || h.Type == note.TypeProcedural)
}

// Similar returns up to limit live durable notes of n's project (other
// than n and the notes it supersedes) whose titles are closest to n's,
// most similar first: after a write, the notes the new one may have
// meant to replace.
func (s *Store) Similar(ctx context.Context, n *note.Note, limit int) ([]SimilarNote, error) {
	if limit <= 0 || strings.TrimSpace(n.Title) == "" {
		return []SimilarNote{}, nil
	}
	hits, err := guarded(ctx, s, func() ([]index.Hit, error) {
		return s.idx().Search(ctx, n.Title, index.Filter{Project: n.Project, Live: true, Limit: similarCandidates})
	})
	if err != nil {
		return nil, err
	}
	mine := titleWords(n.Title)
	out := []SimilarNote{}
	for _, h := range hits {
		if h.ID == n.ID || slices.Contains(n.Supersedes, h.ID) || !sameFactCandidate(h) {
			continue
		}
		if sim := dice(mine, titleWords(h.Title)); sim >= similarFloor {
			out = append(out, SimilarNote{ID: h.ID, Title: h.Title, Similarity: float64(int(sim*100+0.5)) / 100})
		}
	}
	slices.SortStableFunc(out, func(a, b SimilarNote) int { return cmp.Compare(b.Similarity, a.Similarity) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// MarkSameFact sets LooksLike on each hit that looks like another
// version of one fact as another hit (the closest such): live durable notes of the same project whose
// titles are at least SameFactSimilarity alike, neither superseding the
// other. Hits are compared among themselves only (a search's or a
// session's notes), so it costs no query.
func MarkSameFact(hits []index.Hit) {
	words := make([]map[string]bool, len(hits))
	for i, h := range hits {
		if sameFactCandidate(h) {
			words[i] = titleWords(h.Title)
		}
	}
	// Each note names only its closest match (the first, newest, of
	// equals): titles built on one pattern ("Release notes 1.2", "...
	// 1.3") would otherwise name each other by the dozen.
	best := make([]float64, len(hits))
	for i := range hits {
		hits[i].LooksLike = nil
	}
	for i := range hits {
		for j := range hits {
			a, b := hits[i], hits[j]
			if i == j || words[i] == nil || words[j] == nil || a.Project != b.Project || a.ID == b.ID ||
				slices.Contains(a.Supersedes, b.ID) || slices.Contains(b.Supersedes, a.ID) {
				continue
			}
			if d, same := sameFact(words[i], words[j]); same && d > best[i] {
				best[i] = d
				hits[i].LooksLike = []string{b.ID}
			}
		}
	}
}
