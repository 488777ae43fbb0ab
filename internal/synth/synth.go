// Package synth generates synthetic note stores for benchmarks: English
// function and content words plus generated pseudo-words, drawn with a
// Zipf distribution so term frequencies look like prose (a few words in
// nearly every note, a long tail of rare ones), which is what makes BM25
// and FTS5 costs realistic. Everything is seeded and deterministic.
package synth

import (
	"fmt"
	"math/rand"
	"os"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

// common English words, most frequent first; they form the head of the
// Zipf distribution.
var common = strings.Fields(`the of and to a in is it you that he was for on are with as his they be at one have
this from or had by not word but what some we can out other were all there when up use your how said an each she
which do their time if will way about many then them write would like so these her long make thing see him two has
look more day could go come did number sound no most people my over know water than call first who may down side been
now find any new work part take get place made live where after back little only round man year came show every good
me give our under name very through just form sentence great think say help low line differ turn cause much mean
before move right boy old too same tell does set three want air well also play small end put home read hand port
large spell add even land here must big high such follow act why ask men change went light kind off need house
picture try us again animal point mother world near build self earth father head stand own page should country found
answer school grow study still learn plant cover food sun four between state keep eye never last let thought city
tree cross farm hard start might story saw far sea draw left late run while press close night real life few north
server database config deploy build test cache query index commit branch merge release session token error lock
write read file path network timeout retry queue worker thread memory disk backup schema migration sqlite postgres
docker kubernetes nginx python golang rust typescript react api endpoint request response header client proxy`)

var syllables = strings.Fields(`ka lo mi ne ru ta shi po zen ar el on ix ul ba de fi go hu ja ke li mo nu pa qu re
so tu va we xo yu za bri cla dro fle gri plo stra tri vin wor`)

// Vocab is the generator's word list: common words first, then
// pseudo-words, so word i has Zipf rank i.
type Vocab []string

// NewVocab builds a vocabulary of n words.
func NewVocab(n int, seed int64) Vocab {
	r := rand.New(rand.NewSource(seed))
	v := append(Vocab{}, common...)
	seen := map[string]bool{}
	for _, w := range v {
		seen[w] = true
	}
	for len(v) < n {
		k := 2 + r.Intn(3)
		var b strings.Builder
		for i := 0; i < k; i++ {
			b.WriteString(syllables[r.Intn(len(syllables))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			v = append(v, w)
		}
	}
	return v
}

// Gen draws words and notes.
type Gen struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	vocab Vocab
}

// NewGen returns a generator over vocab.
func NewGen(vocab Vocab, seed int64) *Gen {
	r := rand.New(rand.NewSource(seed))
	return &Gen{r: r, zipf: rand.NewZipf(r, 1.07, 2, uint64(len(vocab)-1)), vocab: vocab}
}

// Word draws one word.
func (g *Gen) Word() string { return g.vocab[g.zipf.Uint64()] }

// Words draws n words joined by spaces.
func (g *Gen) Words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = g.Word()
	}
	return strings.Join(w, " ")
}

// Body is 50 to 300 words in sentences of 6 to 16 words.
func (g *Gen) Body() string {
	total := 50 + g.r.Intn(251)
	var b strings.Builder
	for total > 0 {
		n := 6 + g.r.Intn(11)
		if n > total {
			n = total
		}
		s := g.Words(n)
		b.WriteString(strings.ToUpper(s[:1]) + s[1:] + ".")
		total -= n
		if total > 0 {
			if g.r.Intn(5) == 0 {
				b.WriteString("\n\n")
			} else {
				b.WriteString(" ")
			}
		}
	}
	return b.String()
}

// Note returns a complete synthetic note stamped at t.
func (g *Gen) Note(t time.Time) *note.Note {
	types := note.Types()
	typ := types[g.r.Intn(len(types))]
	title := g.Words(3 + g.r.Intn(6))
	n := note.New(typ, strings.ToUpper(title[:1])+title[1:], g.Body(), t)
	n.Project = fmt.Sprintf("github.com/example/project%02d", g.r.Intn(20))
	n.MachineID = "bench"
	for i := g.r.Intn(4); i > 0; i-- {
		n.Tags = append(n.Tags, g.vocab[200+g.r.Intn(200)])
	}
	n.Tags = dedupe(n.Tags)
	return n
}

// Query draws a prompt-like query of 4 to 14 words.
func (g *Gen) Query() string { return g.Words(4 + g.r.Intn(11)) }

func dedupe(in []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Fill writes n synthetic notes into tree, timestamps one second apart
// from start, and returns their relative paths. It skips the fsync of
// note.Tree.Write: a benchmark store is disposable, and 100,000 fsyncs
// would dominate the set-up time.
func Fill(tree note.Tree, g *Gen, n int, start time.Time) ([]string, error) {
	paths := make([]string, 0, n)
	for _, t := range note.Types() {
		if err := os.MkdirAll(tree.Path(t), 0o755); err != nil {
			return nil, err
		}
	}
	for i := 0; i < n; i++ {
		nt := g.Note(start.Add(time.Duration(i) * time.Second))
		nt.Scope = tree.Scope
		rel := nt.RelPath()
		if err := os.WriteFile(tree.Path(rel), note.Marshal(nt), 0o644); err != nil {
			return paths, fmt.Errorf("write %s: %w", rel, err)
		}
		paths = append(paths, rel)
	}
	return paths, nil
}
