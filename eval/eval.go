package eval

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// Case is one query and the ids of the notes it is about.
type Case struct {
	Query    string   `json:"query"`
	Relevant []string `json:"relevant"`
	Group    string   `json:"group,omitempty"` // optional label reported separately (e.g. a category)
	// Equivalent lists, per relevant id, other ids that count as finding
	// it (the notes that superseded it); the denominator stays len(Relevant).
	Equivalent map[string][]string `json:"-"`
}

// Hit is one ranked result.
type Hit struct {
	ID   string
	Text string // what would be injected (title and body)
}

// Searcher ranks notes for a query.
type Searcher func(ctx context.Context, query string, k int) ([]Hit, error)

// ReadDataset parses JSONL cases. Blank lines are skipped; a malformed line
// is an error naming its line number.
func ReadDataset(r io.Reader) ([]Case, error) {
	var out []Case
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		var c Case
		if err := json.Unmarshal([]byte(s), &c); err != nil {
			return nil, fmt.Errorf("dataset line %d: %w", line, err)
		}
		if strings.TrimSpace(c.Query) == "" {
			return nil, fmt.Errorf("dataset line %d: query is empty", line)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read dataset: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("dataset has no cases")
	}
	return out, nil
}

// RecallAt is the fraction of relevant ids among the first k hit ids
// (duplicates count once). An empty relevant set scores 0.
func RecallAt(hits []string, relevant []string, k int) float64 {
	return recallAt(hits, relevant, nil, k)
}

func recallAt(hits, relevant []string, equiv map[string][]string, k int) float64 {
	if len(relevant) == 0 {
		return 0
	}
	top := map[string]bool{}
	for i, h := range hits {
		if i >= k {
			break
		}
		top[h] = true
	}
	rel := map[string]bool{}
	found := 0
	for _, r := range relevant {
		if rel[r] {
			continue
		}
		rel[r] = true
		if top[r] {
			found++
			continue
		}
		for _, e := range equiv[r] {
			if top[e] {
				found++
				break
			}
		}
	}
	return float64(found) / float64(len(rel))
}

// ReciprocalRank is 1/rank of the first relevant hit, 0 if none.
func ReciprocalRank(hits []string, relevant []string) float64 {
	return reciprocalRank(hits, relevant, nil)
}

func reciprocalRank(hits, relevant []string, equiv map[string][]string) float64 {
	ok := map[string]bool{}
	for _, r := range relevant {
		ok[r] = true
		for _, e := range equiv[r] {
			ok[e] = true
		}
	}
	for i, h := range hits {
		if ok[h] {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// EstimateTokens is the usual characters/4 estimate, rounded up.
func EstimateTokens(s string) int { return (len([]rune(s)) + 3) / 4 }

// Report is the outcome of one run.
type Report struct {
	Cases       int                `json:"cases"`
	Ks          []int              `json:"ks"`
	Recall      map[string]float64 `json:"recall"` // "5" -> recall@5
	MRR         float64            `json:"mrr"`
	MeanLatency float64            `json:"latency_mean_ms"`
	P95Latency  float64            `json:"latency_p95_ms"`
	Tokens      map[string]float64 `json:"tokens"` // "5" -> mean tokens of the top 5 hits
	Groups      map[string]*Report `json:"groups,omitempty"`
	Mode        string             `json:"mode,omitempty"` // the searcher's ranking, when it has several (fts, vec, hybrid)
}

// Run scores every case. MRR looks at the first max(ks) hits.
func Run(ctx context.Context, cases []Case, ks []int, search Searcher) (*Report, error) {
	if len(ks) == 0 {
		ks = []int{1, 3, 5, 10}
	}
	sort.Ints(ks)
	var all []scored
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s, err := score(ctx, c, ks, search)
		if err != nil {
			return nil, err
		}
		all = append(all, s)
	}
	rep := summarize(all, ks)
	groups := map[string][]scored{}
	for _, s := range all {
		if s.group != "" {
			groups[s.group] = append(groups[s.group], s)
		}
	}
	if len(groups) > 0 {
		rep.Groups = map[string]*Report{}
		for g, list := range groups {
			rep.Groups[g] = summarize(list, ks)
		}
	}
	return rep, nil
}

// scored is one case's scores: recall and tokens at each k, its
// reciprocal rank and the search's latency.
type scored struct {
	group  string
	recall []float64
	tokens []float64
	rr     float64
	lat    time.Duration
}

// score runs case c's search for the largest of ks (sorted) and scores
// its hits.
func score(ctx context.Context, c Case, ks []int, search Searcher) (scored, error) {
	t0 := time.Now()
	hits, err := search(ctx, c.Query, ks[len(ks)-1])
	lat := time.Since(t0)
	if err != nil {
		return scored{}, fmt.Errorf("query %q: %w", c.Query, err)
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	s := scored{group: c.Group, rr: reciprocalRank(ids, c.Relevant, c.Equivalent), lat: lat}
	for _, k := range ks {
		s.recall = append(s.recall, recallAt(ids, c.Relevant, c.Equivalent, k))
		n := 0
		for i := 0; i < k && i < len(hits); i++ {
			n += EstimateTokens(hits[i].Text)
		}
		s.tokens = append(s.tokens, float64(n))
	}
	return s, nil
}

// summarize is the report of the scored cases in list: means, and the
// 95th percentile of the latency.
func summarize(list []scored, ks []int) *Report {
	r := &Report{Cases: len(list), Ks: ks, Recall: map[string]float64{}, Tokens: map[string]float64{}}
	if len(list) == 0 {
		return r
	}
	var lats []float64
	for _, s := range list {
		r.MRR += s.rr
		for i, k := range ks {
			r.Recall[fmt.Sprint(k)] += s.recall[i]
			r.Tokens[fmt.Sprint(k)] += s.tokens[i]
		}
		ms := float64(s.lat.Microseconds()) / 1000
		r.MeanLatency += ms
		lats = append(lats, ms)
	}
	n := float64(len(list))
	r.MRR /= n
	r.MeanLatency /= n
	for _, k := range ks {
		r.Recall[fmt.Sprint(k)] /= n
		r.Tokens[fmt.Sprint(k)] = math.Round(r.Tokens[fmt.Sprint(k)] / n)
	}
	sort.Float64s(lats)
	r.P95Latency = lats[int(math.Ceil(0.95*n))-1]
	return r
}

// ExpandRelevant adds to relevant every note that supersedes one of them,
// transitively (cycles end).
func ExpandRelevant(relevant []string, replacedBy map[string][]string) []string {
	seen := map[string]bool{}
	var out []string
	var visit func(id string)
	visit = func(id string) {
		if seen[id] {
			return
		}
		seen[id] = true
		out = append(out, id)
		for _, s := range replacedBy[id] {
			visit(s)
		}
	}
	for _, r := range relevant {
		visit(r)
	}
	return out
}
