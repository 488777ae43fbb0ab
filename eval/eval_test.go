package eval

import (
	"context"
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestMetricsByHand(t *testing.T) {
	hits := []string{"a", "b", "c", "a", "d"}
	if r := RecallAt(hits, []string{"c", "z"}, 3); !near(r, 0.5) {
		t.Errorf("recall@3 = %v, want 0.5 (one of two relevant)", r)
	}
	if r := RecallAt(hits, []string{"c", "z"}, 2); r != 0 {
		t.Errorf("recall@2 = %v", r)
	}
	if r := RecallAt(hits, []string{"a"}, 5); r != 1 {
		t.Errorf("duplicate hits must count once: %v", r)
	}
	if r := RecallAt(hits, nil, 5); r != 0 {
		t.Errorf("empty relevant set scores 0: %v", r)
	}
	if rr := ReciprocalRank(hits, []string{"d", "c"}); !near(rr, 1.0/3) {
		t.Errorf("rr = %v, want 1/3", rr)
	}
	if rr := ReciprocalRank(hits, []string{"z"}); rr != 0 {
		t.Errorf("rr = %v", rr)
	}
	if EstimateTokens("") != 0 || EstimateTokens("abcd") != 1 || EstimateTokens("abcde") != 2 || EstimateTokens("éééé") != 1 {
		t.Error("EstimateTokens")
	}
}

func TestRunOnAKnownRanking(t *testing.T) {
	ranking := map[string][]Hit{
		"q1": {{"a", "aaaa"}, {"b", "bbbbbbbb"}},
		"q2": {{"x", "x"}, {"y", "y"}, {"c", "c"}},
		"q3": {},
	}
	search := func(_ context.Context, q string, k int) ([]Hit, error) {
		h := ranking[q]
		if len(h) > k {
			h = h[:k]
		}
		return h, nil
	}
	cases := []Case{
		{Query: "q1", Relevant: []string{"a"}, Group: "g1"},
		{Query: "q2", Relevant: []string{"c", "d"}, Group: "g1"},
		{Query: "q3", Relevant: []string{"e"}, Group: "g2"},
	}
	rep, err := Run(context.Background(), cases, []int{1, 3}, search)
	if err != nil {
		t.Fatal(err)
	}
	// recall@1: 1, 0, 0 -> 1/3; recall@3: 1, 0.5, 0 -> 0.5; MRR: 1, 1/3, 0 -> 4/9
	if !near(rep.Recall["1"], 1.0/3) || !near(rep.Recall["3"], 0.5) || !near(rep.MRR, 4.0/9) {
		t.Errorf("report %+v", rep)
	}
	if rep.Tokens["1"] != 1 { // (1 + 1 + 0) / 3 rounded
		t.Errorf("tokens@1 = %v", rep.Tokens["1"])
	}
	if g := rep.Groups["g1"]; g == nil || g.Cases != 2 || !near(g.Recall["3"], 0.75) {
		t.Errorf("group g1 %+v", g)
	}
}

func TestReadDataset(t *testing.T) {
	cs, err := ReadDataset(strings.NewReader(`{"query":"a b","relevant":["X"]}` + "\n\n" + `{"query":"c","relevant":[]}` + "\n"))
	if err != nil || len(cs) != 2 || cs[0].Relevant[0] != "X" {
		t.Fatalf("%+v %v", cs, err)
	}
	for _, bad := range []string{"", "{", `{"query":""}`} {
		if _, err := ReadDataset(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if _, err := ReadDataset(strings.NewReader("{\"query\":\"ok\"}\n{broken\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error should name line 2: %v", err)
	}
}

func TestSelfCases(t *testing.T) {
	notes := []Note{
		{ID: "n1", Body: "Short. This sentence has more than six words in it. Tiny."},
		{ID: "n2", Body: "none long"},
	}
	cs := SelfCases(notes, 10, 1)
	if len(cs) != 1 || cs[0].Relevant[0] != "n1" || cs[0].Query != "This sentence has more than six words in it" {
		t.Errorf("%+v", cs)
	}
}

func TestExpandRelevant(t *testing.T) {
	got := ExpandRelevant([]string{"a"}, map[string][]string{"a": {"b"}, "b": {"c", "a"}})
	if strings.Join(got, ",") != "a,b,c" {
		t.Errorf("%v", got)
	}
	if got := ExpandRelevant([]string{"x"}, nil); strings.Join(got, ",") != "x" {
		t.Errorf("%v", got)
	}
}

func TestSupersederCountsAsTheNote(t *testing.T) {
	c := Case{Query: "q", Relevant: []string{"old", "other"}, Equivalent: map[string][]string{"old": {"new"}}}
	search := func(_ context.Context, _ string, _ int) ([]Hit, error) { return []Hit{{ID: "x"}, {ID: "new"}}, nil }
	rep, err := Run(context.Background(), []Case{c}, []int{2}, search)
	if err != nil || !near(rep.Recall["2"], 0.5) || !near(rep.MRR, 0.5) {
		t.Errorf("%+v %v (want recall 1/2 for one of two, MRR 1/2)", rep, err)
	}
}
