package locomo

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/eval"
	"github.com/anamnesis-memory/anamnesis/internal/fts5token"
)

// TestRankingExperiments scores ranking variants on LoCoMo in memory
// (ANAMNESIS_LOCOMO=../shared/data/locomo go test -run RankingExperiments
// -v ./internal/locomo/). The figures go to docs/recall.md; the variant
// "session bm25 k1=1.2 b=0.75" is what search does.
func TestRankingExperiments(t *testing.T) {
	dir := os.Getenv("ANAMNESIS_LOCOMO")
	if dir == "" {
		t.Skip("set ANAMNESIS_LOCOMO to the LoCoMo directory")
	}
	sessions, questions, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var qs []Question
	for _, q := range questions {
		if q.Category >= 1 && q.Category <= 4 {
			qs = append(qs, q)
		}
	}
	sess := newCorpus()
	bi := newCorpus() // adjacent token pairs of each session, as tokens
	turns := newCorpus()
	win := newCorpus()
	var turnOwner, winOwner []int
	for i, s := range sessions {
		sess.add(s.Title + " " + s.Body)
		bi.addBigrams(s.Title + " " + s.Body)
		lines := strings.Split(s.Body, "\n")
		var ts []string
		for _, l := range lines {
			if strings.HasPrefix(l, "- **") {
				ts = append(ts, l)
			}
		}
		for j, l := range ts {
			turns.add(l)
			turnOwner = append(turnOwner, i)
			w := strings.Join(ts[max(0, j-1):min(len(ts), j+2)], " ")
			win.add(w)
			winOwner = append(winOwner, i)
		}
	}
	sess.finish()
	bi.finish()
	turns.finish()
	win.finish()

	type variant struct {
		name  string
		score func(q []string) []float64
	}
	maxOver := func(c *corpus, owner []int, k1, b float64) func([]string) []float64 {
		return func(q []string) []float64 {
			out := make([]float64, len(sessions))
			for i, v := range c.bm25(q, k1, b) {
				out[owner[i]] = math.Max(out[owner[i]], v)
			}
			return out
		}
	}
	norm := func(v []float64) []float64 {
		m := 0.0
		for _, x := range v {
			m = math.Max(m, x)
		}
		out := make([]float64, len(v))
		if m > 0 {
			for i, x := range v {
				out[i] = x / m
			}
		}
		return out
	}
	mix := func(a, b func([]string) []float64, w float64) func([]string) []float64 {
		return func(q []string) []float64 {
			x, y := norm(a(q)), norm(b(q))
			out := make([]float64, len(x))
			for i := range x {
				out[i] = (1-w)*x[i] + w*y[i]
			}
			return out
		}
	}
	sessBM := func(k1, b float64) func([]string) []float64 {
		return func(q []string) []float64 { return sess.bm25(q, k1, b) }
	}
	coverage := func(a func([]string) []float64, pow float64) func([]string) []float64 {
		return func(q []string) []float64 {
			sc := a(q)
			n := float64(len(sess.tf))
			var total float64
			w := map[string]float64{}
			for _, t := range q {
				if df := float64(sess.df[t]); df > 0 {
					w[t] = math.Max(math.Log((n-df+0.5)/(df+0.5)), 1e-6)
				}
			}
			for _, x := range w {
				total += x
			}
			for i := range sc {
				var got float64
				for t, x := range w {
					if sess.tf[i][t] > 0 {
						got += x
					}
				}
				if total > 0 {
					sc[i] *= math.Pow(got/total, pow)
				}
			}
			return sc
		}
	}
	withBigrams := func(a func([]string) []float64, w float64) func([]string) []float64 {
		return func(q []string) []float64 {
			var pairs []string
			for i := 0; i+1 < len(q); i++ {
				pairs = append(pairs, q[i]+" "+q[i+1])
			}
			x, y := a(q), bi.bm25(pairs, 1.2, 0.75)
			for i := range x {
				x[i] += w * y[i]
			}
			return x
		}
	}
	vs := []variant{
		{"session bm25 k1=1.2 b=0.75 (search)", sessBM(1.2, 0.75)},
		{"session + adjacent query-word pairs x0.5", withBigrams(sessBM(1.2, 0.75), 0.5)},
		{"session + adjacent query-word pairs x1", withBigrams(sessBM(1.2, 0.75), 1)},
		{"session(1.6,.5) + turn .3 + normalized pairs x0.3", func(q []string) []float64 {
			x := mix(sessBM(1.6, 0.5), maxOver(turns, turnOwner, 1.6, 0.5), 0.3)(q)
			y := norm(withBigrams(func([]string) []float64 { return make([]float64, len(sessions)) }, 1)(q))
			for i := range x {
				x[i] += 0.3 * y[i]
			}
			return x
		}},
		{"session bm25 k1=1.6 b=0.50", sessBM(1.6, 0.5)},
		{"idf coverage^1 x session", coverage(sessBM(1.2, 0.75), 1)},
		{"idf coverage^0.5 x session", coverage(sessBM(1.2, 0.75), 0.5)},
		{"idf coverage^0.5 x (session+turn .3)", coverage(mix(sessBM(1.2, 0.75), maxOver(turns, turnOwner, 1.2, 0.75), 0.3), 0.5)},
		{"session(1.6,.5) + turn max .3", mix(sessBM(1.6, 0.5), maxOver(turns, turnOwner, 1.2, 0.75), 0.3)},
		{"session(1.6,.5) + turn(1.6,.5) max .3", mix(sessBM(1.6, 0.5), maxOver(turns, turnOwner, 1.6, 0.5), 0.3)},
		{"session + turn max + window max .25/.25", func(q []string) []float64 {
			a, b, c := norm(sess.bm25(q, 1.2, 0.75)), norm(maxOver(turns, turnOwner, 1.2, 0.75)(q)), norm(maxOver(win, winOwner, 1.2, 0.75)(q))
			for i := range a {
				a[i] = 0.5*a[i] + 0.25*b[i] + 0.25*c[i]
			}
			return a
		}},
	}
	for _, k1 := range []float64{0.6, 0.9, 1.2, 1.6, 2.0} {
		for _, b := range []float64{0.3, 0.5, 0.75, 0.9} {
			vs = append(vs, variant{fmt.Sprintf("grid: session bm25 k1=%.1f b=%.2f", k1, b), sessBM(k1, b)})
		}
	}
	vs = append(vs,
		variant{"turn max", maxOver(turns, turnOwner, 1.2, 0.75)},
		variant{"3-turn window max", maxOver(win, winOwner, 1.2, 0.75)},
	)
	for _, w := range []float64{0.2, 0.35, 0.5} {
		vs = append(vs,
			variant{fmt.Sprintf("session + turn max, w=%.2f", w), mix(sessBM(1.2, 0.75), maxOver(turns, turnOwner, 1.2, 0.75), w)},
			variant{fmt.Sprintf("session + window max, w=%.2f", w), mix(sessBM(1.2, 0.75), maxOver(win, winOwner, 1.2, 0.75), w)},
		)
	}
	for _, v := range vs {
		for _, stop := range []bool{false, true} {
			var r5, r10, mrr float64
			perCat := map[int][3]float64{}
			nCat := map[int]int{}
			for _, q := range qs {
				terms := queryTerms(q.Case.Query, stop)
				sc := v.score(terms)
				order := make([]int, len(sc))
				for i := range order {
					order[i] = i
				}
				sort.SliceStable(order, func(i, j int) bool { return sc[order[i]] > sc[order[j]] })
				var hits []string
				for _, i := range order[:10] {
					if sc[i] <= 0 {
						break
					}
					hits = append(hits, sessions[i].ID)
				}
				a, b, c := eval.RecallAt(hits, q.Case.Relevant, 5), eval.RecallAt(hits, q.Case.Relevant, 10), eval.ReciprocalRank(hits, q.Case.Relevant)
				r5, r10, mrr = r5+a, r10+b, mrr+c
				pc := perCat[q.Category]
				perCat[q.Category] = [3]float64{pc[0] + a, pc[1] + b, pc[2] + c}
				nCat[q.Category]++
			}
			n := float64(len(qs))
			cats := ""
			for c := 1; c <= 4; c++ {
				cats += fmt.Sprintf(" c%d %.3f/%.3f", c, perCat[c][0]/float64(nCat[c]), perCat[c][2]/float64(nCat[c]))
			}
			t.Logf("%-40s stop=%-5v R@5 %.3f R@10 %.3f MRR %.3f |%s", v.name, stop, r5/n, r10/n, mrr/n, cats)
		}
	}
}

var queryWord = regexp.MustCompile(`[\p{L}\p{N}_]+`)

func queryTerms(q string, stop bool) []string {
	var out []string
	for _, w := range queryWord.FindAllString(q, -1) {
		if stop && grepStops[strings.ToLower(w)] {
			continue
		}
		out = append(out, fts5token.Tokens(w)...)
	}
	return out
}

type corpus struct {
	tf    []map[string]int
	dl    []int
	df    map[string]int
	avgdl float64
}

func newCorpus() *corpus { return &corpus{df: map[string]int{}} }

func (c *corpus) add(text string) {
	m := map[string]int{}
	n := 0
	fts5token.Each(text, func(tok []byte) {
		m[string(tok)]++
		n++
	})
	for t := range m {
		c.df[t]++
	}
	c.tf = append(c.tf, m)
	c.dl = append(c.dl, n)
}

// addBigrams adds a document whose tokens are the text's adjacent token
// pairs ("a b").
func (c *corpus) addBigrams(text string) {
	var toks []string
	fts5token.Each(text, func(tok []byte) { toks = append(toks, string(tok)) })
	m := map[string]int{}
	for i := 0; i+1 < len(toks); i++ {
		m[toks[i]+" "+toks[i+1]]++
	}
	for t := range m {
		c.df[t]++
	}
	c.tf = append(c.tf, m)
	c.dl = append(c.dl, max(len(toks)-1, 0))
}

func (c *corpus) finish() {
	total := 0
	for _, n := range c.dl {
		total += n
	}
	c.avgdl = float64(total) / float64(len(c.dl))
}

func (c *corpus) bm25(q []string, k1, b float64) []float64 {
	out := make([]float64, len(c.tf))
	n := float64(len(c.tf))
	for _, t := range q {
		df := float64(c.df[t])
		if df == 0 {
			continue
		}
		idf := math.Log((n - df + 0.5) / (df + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		for i, m := range c.tf {
			f := float64(m[t])
			if f == 0 {
				continue
			}
			out[i] += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(c.dl[i])/c.avgdl))
		}
	}
	return out
}
