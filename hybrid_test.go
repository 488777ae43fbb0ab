package anamnesis

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/index"
)

// The arithmetic: ranks 1 and 4 give 1/61 + 1/64 ≈ 0.0320,
// ranks 12 and 1 give 1/72 + 1/61 ≈ 0.0303, so the first wins.
func TestFuseIsReciprocalRank(t *testing.T) {
	mk := func(ids ...string) []index.Hit {
		var out []index.Hit
		for _, id := range ids {
			var h index.Hit
			h.ID = id
			out = append(out, h)
		}
		return out
	}
	var bm25ids []string
	for i := 1; i <= 12; i++ {
		bm25ids = append(bm25ids, map[int]string{1: "A", 12: "B"}[i]+strings.Repeat("x", i))
	}
	bm25ids[0], bm25ids[11] = "A", "B"
	vec := mk("B", "v2", "v3", "A")
	cos := []float64{0.9, 0.8, 0.7, 0.6}
	out := fuse(mk(bm25ids...), vec, cos, 1, 1)
	score := map[string]index.Hit{}
	for _, h := range out {
		score[h.ID] = h
	}
	a, b := score["A"], score["B"]
	if math.Abs(a.Score-(1.0/61+1.0/64)) > 1e-12 || math.Abs(b.Score-(1.0/72+1.0/61)) > 1e-12 {
		t.Errorf("A %.6f, B %.6f", a.Score, b.Score)
	}
	if out[0].ID != "A" || out[1].ID != "B" {
		t.Errorf("order %s, %s: A (0.0320) must beat B (0.0303)", out[0].ID, out[1].ID)
	}
	if a.BM25Rank != 1 || a.VecRank != 4 || a.Cosine != 0.6 || b.BM25Rank != 12 || b.VecRank != 1 {
		t.Errorf("ranks: A %+v B %+v", a, b)
	}
	if v := score["v2"]; v.BM25Rank != 0 || v.VecRank != 2 || math.Abs(v.Score-1.0/62) > 1e-12 {
		t.Errorf("vector-only hit: %+v", v)
	}
}

// conceptEmbedder is a small deterministic Embedder: words map to
// concepts through a synonym table, so a paraphrase with no word in common
// embeds close to its original.
type conceptEmbedder struct {
	mu    sync.Mutex // a recall that gave up on it may still be embedding
	calls int
	fail  error
	delay time.Duration // before answering, unless ctx ends first
}

// set changes how the embedder answers from now on.
func (e *conceptEmbedder) set(delay time.Duration, fail error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.delay, e.fail = delay, fail
}

var concepts = map[string]string{
	"automobile": "car", "car": "car", "vehicle": "car",
	"repair": "fix", "fix": "fix", "mend": "fix",
	"sluggish": "slow", "slow": "slow", "laggy": "slow",
	"datastore": "database", "database": "database", "db": "database",
}

func (e *conceptEmbedder) Model() string { return "concepts-v1" }

func (e *conceptEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.calls++
	fail, delay := e.fail, e.delay
	e.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 32)
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return r < 'a' || r > 'z' }) {
			c, ok := concepts[w]
			if !ok {
				continue // only concept words count: a toy, but a deterministic one
			}
			h := fnv.New32a()
			h.Write([]byte(c))
			v[h.Sum32()%32]++
		}
		out[i] = v
	}
	return out, nil
}

// conceptStore is a new store whose embedder is a conceptEmbedder.
func conceptStore(t *testing.T) (*Store, *conceptEmbedder) {
	t.Helper()
	emb := &conceptEmbedder{}
	s, err := Open(ctx, t.TempDir(), Options{MachineID: "m", Create: true, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, emb
}

// A paraphrase that shares no word with a note finds it through the
// vector leg; BM25 alone cannot; a dead embedder degrades to BM25.
func TestHybridFindsAParaphrase(t *testing.T) {
	s, emb := conceptStore(t)
	target, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "Sluggish datastore", Body: "The db gets laggy under load."})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "Car repair", Body: "Mend the automobile on Fridays."}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.EmbedPending(ctx)
	if err != nil || rep.Embedded != 2 || rep.Pending != 0 {
		t.Fatalf("embed: %+v %v", rep, err)
	}
	if rep, _ := s.EmbedPending(ctx); rep.Embedded != 0 {
		t.Errorf("unchanged notes embedded again: %+v", rep)
	}
	if st, err := s.Status(ctx); err != nil || st.Vectors == nil || st.Vectors.With != 2 || st.Vectors.Without != 0 || st.Vectors.Model != "concepts-v1" {
		t.Errorf("status vectors: %+v %v", st.Vectors, err)
	}
	if c := s.embedderCheck(ctx); c.State != CheckOK {
		t.Errorf("doctor: %+v", c)
	}
	const q = "why database slow"
	if hits, _ := s.Search(ctx, q, Filter{}); len(hits) != 0 {
		t.Fatalf("setup: BM25 found %v for a query with no shared word", hits)
	}
	hits, degraded, err := s.SearchMode(ctx, q, Filter{}, ModeHybrid)
	if err != nil || degraded != nil || len(hits) == 0 || hits[0].ID != target.ID {
		t.Fatalf("hybrid: %v %v %v", hits, degraded, err)
	}
	if hits[0].VecRank != 1 || hits[0].BM25Rank != 0 || hits[0].Cosine < 0.9 || hits[0].Score <= 0 {
		t.Errorf("the hit does not say why: %+v", hits[0])
	}
	emb.set(0, errors.New("embedder at http://127.0.0.1:11434 is not answering"))
	hits, degraded, err = s.SearchMode(ctx, "sluggish datastore", Filter{}, ModeHybrid)
	if err != nil || degraded == nil || len(hits) != 1 || hits[0].ID != target.ID {
		t.Errorf("a dead embedder must degrade to BM25 and say so: %v %v %v", hits, degraded, err)
	}
	if _, _, err := s.SearchMode(ctx, q, Filter{}, ModeVec); err == nil {
		t.Error("vec mode with a dead embedder must fail")
	}
	if c := s.embedderCheck(ctx); c.State != CheckWarn || !strings.Contains(c.Detail, "does not answer") {
		t.Errorf("doctor with a dead embedder: %+v", c)
	}
	if _, _, err := s.SearchMode(ctx, q, Filter{}, "magic"); !errors.Is(err, ErrInvalid) {
		t.Errorf("a bad mode: %v", err)
	}
	// An edit makes the note pending again.
	emb.set(0, nil)
	n, _, _ := s.Get(ctx, target.ID)
	n.Body = "The db is laggy at night."
	if _, err := s.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.EmbedPending(ctx); err != nil || rep.Embedded != 1 {
		t.Errorf("after an edit: %+v %v", rep, err)
	}
}

// Prompt recall adds a note that shares no word with the prompt when its
// embedding is close enough, adds nothing for chit-chat, and falls back
// to BM25 alone when the embedding is late.
func TestRecallUsesTheVectorLegWithinItsBudget(t *testing.T) {
	s, emb := conceptStore(t)
	slow, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "Sluggish datastore", Body: "The db gets laggy under load; add the index on orders."})
	if err != nil {
		t.Fatal(err)
	}
	car, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "Bus stop", Body: "Take the bus to the zorblax garage."})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ { // so that common words are not distinctive
		if _, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: fmt.Sprintf("filler %d", i), Body: "why is it so, the load and the weather"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.EmbedPending(ctx); err != nil {
		t.Fatal(err)
	}
	const paraphrase = "why is the database so slow"
	if hits, _ := s.recallByWords(ctx, paraphrase, 6); len(hits) != 0 {
		t.Fatalf("setup: BM25 recalls %v", hits)
	}
	hits, err := s.Recall(ctx, paraphrase, 6)
	if err != nil || len(hits) != 1 || hits[0].ID != slow.ID || hits[0].Cosine < s.recallCosine || hits[0].VecRank != 1 {
		t.Fatalf("paraphrase: %+v %v", hits, err)
	}
	if hits, err := s.Recall(ctx, "hello there, thanks a lot", 6); err != nil || len(hits) != 0 {
		t.Fatalf("chit-chat recalled %+v %v", hits, err)
	}
	// A distinctive word and a paraphrase together: both legs, fused.
	hits, err = s.Recall(ctx, "zorblax, and why is the database slow", 6)
	if err != nil || len(hits) != 2 {
		t.Fatalf("both legs: %+v %v", hits, err)
	}
	// Late: BM25 alone, and no longer than the budget.
	emb.set(5*time.Second, nil)
	s.recallTimeout = 50 * time.Millisecond
	start := time.Now()
	hits, err = s.Recall(ctx, "zorblax, and why is the database slow", 6)
	if err != nil || len(hits) != 1 || hits[0].ID != car.ID {
		t.Fatalf("with a late embedder: %+v %v", hits, err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("recall waited %v for a late embedder", took)
	}
	// Dead: BM25 alone, no error.
	emb.set(0, errors.New("connection refused"))
	if hits, err = s.Recall(ctx, "zorblax", 6); err != nil || len(hits) != 1 {
		t.Fatalf("with a dead embedder: %+v %v", hits, err)
	}
}

// config.json's embedder sets prompt recall's floor and wait; values out
// of range are errors that name the key.
func TestEmbedderRecallConfig(t *testing.T) {
	for _, c := range []struct{ json, err string }{
		{`{"kind": "ollama", "url": "u", "model": "m", "min_cosine": 1.5}`, "min_cosine"},
		{`{"kind": "ollama", "url": "u", "model": "m", "prompt_timeout_ms": -1}`, "prompt_timeout_ms"},
	} {
		home := t.TempDir()
		os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{"embedder": `+c.json+`}`), 0o600)
		if _, err := LoadConfig(home); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v", c.json, err)
		}
	}
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{"embedder": {"kind": "ollama", "url": "u", "model": "m", "min_cosine": 0.8, "prompt_timeout_ms": 900}}`), 0o600)
	s, err := Open(ctx, home, Options{MachineID: "m", Create: true, Embedder: &conceptEmbedder{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.recallCosine != 0.8 || s.recallTimeout != 900*time.Millisecond {
		t.Errorf("recall cosine %v timeout %v", s.recallCosine, s.recallTimeout)
	}
}

// Search leaves superseded notes out unless the filter asks for them, in
// every mode (the web UI's "include superseded" toggle).
func TestSearchWithSuperseded(t *testing.T) {
	s, _ := conceptStore(t)
	old, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "Sluggish datastore", Body: "The db gets laggy under load."})
	if err != nil {
		t.Fatal(err)
	}
	repl, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "Sluggish datastore, fixed", Body: "The db was laggy until the index was added.", Supersedes: []string{old.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EmbedPending(ctx); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{ModeFTS, ModeVec, ModeHybrid} {
		hits, _, err := s.SearchMode(ctx, "sluggish datastore", Filter{}, mode)
		if err != nil || !slices.Equal(hitIDs(hits), []string{repl.ID}) {
			t.Errorf("%s, default: %v %v", mode, hitIDs(hits), err)
		}
		hits, _, err = s.SearchMode(ctx, "sluggish datastore", Filter{WithSuperseded: true}, mode)
		if err != nil || len(hits) != 2 || !slices.Contains(hitIDs(hits), old.ID) {
			t.Errorf("%s, with superseded: %v %v", mode, hitIDs(hits), err)
		}
		// Live wins: a caller that asks for live notes gets live notes.
		hits, _, err = s.SearchMode(ctx, "sluggish datastore", Filter{WithSuperseded: true, Live: true}, mode)
		if err != nil || slices.Contains(hitIDs(hits), old.ID) {
			t.Errorf("%s, live and with superseded: %v %v", mode, hitIDs(hits), err)
		}
	}
}
