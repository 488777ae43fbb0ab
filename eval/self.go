package eval

import (
	"math/rand"
	"strings"
)

// Note is what the self-eval needs of a stored note.
type Note struct {
	ID    string
	Title string
	Body  string
}

var sentenceEnd = lazyRegexp(`[.!?]\s+|\n+`)

// SelfCases builds up to n cases from a store's own notes: each query is
// one sentence of a note's body (at least six words, markdown stripped),
// and that note is the relevant one. It measures whether one sentence a
// user remembers is enough to bring the note back among all the others.
// Deterministic for a seed.
func SelfCases(notes []Note, n int, seed int64) []Case {
	r := rand.New(rand.NewSource(seed))
	order := r.Perm(len(notes))
	var out []Case
	for _, i := range order {
		if len(out) == n {
			break
		}
		nt := notes[i]
		var cands []string
		for _, s := range sentenceEnd().Split(nt.Body, -1) {
			s = strings.Trim(strings.TrimSpace(s), "*-#>`_ ")
			if len(strings.Fields(s)) >= 6 {
				cands = append(cands, s)
			}
		}
		if len(cands) == 0 {
			continue
		}
		out = append(out, Case{Query: cands[r.Intn(len(cands))], Relevant: []string{nt.ID}})
	}
	return out
}
