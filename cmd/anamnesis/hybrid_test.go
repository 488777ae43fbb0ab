package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/fakeembed"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// With an embedder in config.json (the fake server, Ollama's API): write
// starts the embedding in the background, search is hybrid and explains
// each hit, a paraphrase with no shared word is found; a second machine
// embeds what a sync brings; a dead embedder leaves BM25 and one line.
func TestHybridSearchThroughTheCLI(t *testing.T) {
	parallel(t)
	srv := fakeembed.Start(t, fakeembed.Options{Model: "nomic-embed-text"})
	hub := testutil.BareHub(t)
	config := func(home, url string) {
		cfg := fmt.Sprintf(`{"embedder": {"kind": "ollama", "url": %q, "model": "nomic-embed-text"}}`, url)
		if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	desk, laptop := t.TempDir(), t.TempDir()
	config(desk, srv.URL)
	config(laptop, srv.URL)
	defer awaitDetached(t, desk)
	defer awaitDetached(t, laptop)
	mustOK(t, anmRemote(t, desk, "desk", hub, "", "write", "--type", "semantic", "--title", "Sluggish datastore", "--body", "The db gets laggy under load; add an index."))
	mustOK(t, anmRemote(t, desk, "desk", hub, "", "write", "--type", "semantic", "--title", "Quarterly budget", "--body", "The meeting is on Mondays."))
	mustOK(t, anmRemote(t, desk, "desk", hub, "", "embed")) // what the background one does; idempotent
	r := mustOK(t, anmRemote(t, desk, "desk", hub, "", "search", "--json", "why", "database", "slow"))
	var out struct {
		Results []struct {
			Title    string
			BM25Rank int     `json:"bm25_rank"`
			VecRank  int     `json:"vec_rank"`
			Cosine   float64 `json:"cosine"`
			Score    float64 `json:"score"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Results) == 0 {
		t.Fatalf("search: %v %s", err, r.stdout)
	}
	top := out.Results[0]
	if top.Title != "Sluggish datastore" || top.VecRank != 1 || top.BM25Rank != 0 || top.Cosine <= 0.3 || top.Score <= 0 {
		t.Errorf("hybrid top hit: %+v", top)
	}
	// Found by the semantic leg only: "bm25_rank": null, the key kept
	// (issue 25: stable keys for --json).
	var raw struct {
		Results []map[string]json.RawMessage
	}
	json.Unmarshal([]byte(r.stdout), &raw)
	if v, ok := raw.Results[0]["bm25_rank"]; !ok || string(v) != "null" {
		t.Errorf("bm25_rank of a semantic-only hit: %q (present %v)", v, ok)
	}
	if r := mustOK(t, anmRemote(t, desk, "desk", hub, "", "search", "--mode", "fts", "why", "database", "slow")); strings.Contains(r.stdout, "Sluggish") {
		t.Errorf("fts mode found the paraphrase: %s", r.stdout)
	}
	// The laptop embeds what its sync brought.
	mustOK(t, anmRemote(t, desk, "desk", hub, "", "sync"))
	mustOK(t, anmRemote(t, laptop, "laptop", hub, "", "sync"))
	mustOK(t, anmRemote(t, laptop, "laptop", hub, "", "embed"))
	st := mustOK(t, anmRemote(t, laptop, "laptop", hub, "", "status", "--json")).stdout
	if !strings.Contains(st, `"with_vector": 2`) || !strings.Contains(st, `"without_vector": 0`) {
		t.Errorf("laptop status after sync and embed: %s", st)
	}
	// A dead embedder: BM25 results and one line on stderr.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	config(laptop, dead)
	r = mustOK(t, anmRemote(t, laptop, "laptop", hub, "", "search", "sluggish", "datastore"))
	if !strings.Contains(r.stdout, "Sluggish datastore") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "BM25 results") {
		t.Errorf("dead embedder: stdout %q stderr %q", r.stdout, r.stderr)
	}
	if r := anmRemote(t, laptop, "laptop", hub, "", "search", "--mode", "vec", "sluggish"); r.code == 0 {
		t.Errorf("vec mode with a dead embedder succeeded: %s", r.stdout)
	}
}

// The prompt hook recalls a note that shares no word with the prompt
// through the vector leg; with a dead or a misconfigured embedder it
// recalls by words alone and writes nothing on stderr (Claude Code shows
// a hook's stderr to the user).
func TestPromptHookHybrid(t *testing.T) {
	parallel(t)
	srv := fakeembed.Start(t, fakeembed.Options{Model: "nomic-embed-text"})
	home := t.TempDir()
	config := func(embedder string) {
		if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"embedder": `+embedder+`}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config(fmt.Sprintf(`{"kind": "ollama", "url": %q, "model": "nomic-embed-text"}`, srv.URL))
	defer awaitDetached(t, home)
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "Sluggish datastore", "--body", "The db gets laggy under load; add the zorblax index."))
	for i := 0; i < 6; i++ {
		mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", fmt.Sprintf("Weather %d", i), "--body", "Rain and wind why so."))
	}
	mustOK(t, anm(t, home, "", "embed"))
	prompt := func(text string) result {
		return anm(t, home, fmt.Sprintf(`{"session_id":"s1","cwd":"/tmp","prompt":%q}`, text), "hook", "prompt")
	}
	if r := prompt("why is the database so slow"); !strings.Contains(r.stdout, "Sluggish datastore") || r.stderr != "" {
		t.Fatalf("paraphrase through the hook: stdout %q stderr %q", r.stdout, r.stderr)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	for i, bad := range []string{
		fmt.Sprintf(`{"kind": "ollama", "url": %q, "model": "nomic-embed-text"}`, dead),
		`{"kind": "carrier-pigeon", "url": "x", "model": "y"}`,
	} {
		config(bad)
		r := anm(t, home, fmt.Sprintf(`{"session_id":"bad%d","cwd":"/tmp","prompt":"the zorblax index"}`, i), "hook", "prompt")
		if r.code != 0 || !strings.Contains(r.stdout, "Sluggish datastore") || r.stderr != "" {
			t.Errorf("embedder %s: code %d stdout %q stderr %q", bad, r.code, r.stdout, r.stderr)
		}
	}
	if r := anm(t, home, "", "doctor"); !strings.Contains(r.stdout, "carrier-pigeon") {
		t.Errorf("doctor does not name the misconfigured embedder: %s", r.stdout)
	}
}

// eval takes the search modes: hybrid by default with an embedder, and
// a semantic mode whose embedder does not answer fails the run instead of
// reporting BM25 figures under its name.
func TestEvalModes(t *testing.T) {
	parallel(t)
	srv := fakeembed.Start(t, fakeembed.Options{Model: "nomic-embed-text"})
	home := t.TempDir()
	config := func(url string) {
		cfg := fmt.Sprintf(`{"embedder": {"kind": "ollama", "url": %q, "model": "nomic-embed-text"}}`, url)
		if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config(srv.URL)
	defer awaitDetached(t, home)
	for i := 0; i < 4; i++ {
		mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", fmt.Sprintf("Runbook %d", i),
			"--body", fmt.Sprintf("Restart the ingest worker number %d before the nightly batch begins.", i)))
	}
	mustOK(t, anm(t, home, "", "embed"))
	for mode, want := range map[string]string{"": "hybrid", "fts": "fts", "vec": "vec"} {
		args := []string{"eval", "--self", "-n", "4", "--json"}
		if mode != "" {
			args = append(args, "--mode", mode)
		}
		var rep struct {
			Mode   string             `json:"mode"`
			Cases  int                `json:"cases"`
			Recall map[string]float64 `json:"recall"`
		}
		r := mustOK(t, anm(t, home, "", args...))
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Mode != want || rep.Cases == 0 || rep.Recall["10"] == 0 {
			t.Errorf("eval --mode %q: %+v %v %s", mode, rep, err, r.stdout)
		}
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	config(dead)
	if r := anm(t, home, "", "eval", "--self", "-n", "4", "--mode", "hybrid"); r.code == 0 || !strings.Contains(r.stderr, "hybrid search") {
		t.Errorf("eval with a dead embedder: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := anm(t, home, "", "eval", "--self", "-n", "4", "--mode", "fts"); r.code != 0 {
		t.Errorf("fts eval needs no embedder: %s", r.stderr)
	}
	if r := anm(t, home, "", "eval", "--self", "--mode", "psychic"); r.code == 0 {
		t.Error("a bad mode was accepted")
	}
}

// After the embedder's model changes, search says on stderr that notes
// lack vectors for the new model, and computes them in the background
// (issue 25): no manual `anamnesis embed`.
func TestSearchEmbedsForANewModelInTheBackground(t *testing.T) {
	srv := fakeembed.Start(t, fakeembed.Options{})
	home := t.TempDir()
	awaitDetached(t, home)
	config := func(model string) {
		cfg := fmt.Sprintf(`{"embedder": {"kind": "ollama", "url": %q, "model": %q}}`, srv.URL, model)
		if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config("model-one")
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "Sluggish datastore", "--body", "The db gets laggy under load."))
	mustOK(t, anm(t, home, "", "embed"))
	if r := mustOK(t, anm(t, home, "", "search", "datastore")); strings.Contains(r.stderr, "no vector") {
		t.Fatalf("every note has a vector, yet: %s", r.stderr)
	}
	config("model-two")
	r := mustOK(t, anm(t, home, "", "search", "datastore"))
	if !strings.Contains(r.stderr, "1 of 1 notes have no vector for model ollama:model-two yet") || !strings.Contains(r.stderr, "computing them in the background") {
		t.Fatalf("stderr: %q", r.stderr)
	}
	if !detachedDone(home, 15*time.Second) {
		t.Fatal("the background embedding never ended")
	}
	if r := mustOK(t, anm(t, home, "", "search", "datastore")); strings.Contains(r.stderr, "no vector") {
		t.Errorf("the vectors were not computed in the background: %s", r.stderr)
	}
}
