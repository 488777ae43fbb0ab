package webui

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/internal/synth"
	"github.com/anamnesis-memory/anamnesis/note"
)

var (
	benchOnce sync.Once
	benchHome string
	benchErr  error
)

// benchStore is a home with 10,000 synthetic notes (internal/synth, as
// the root's benchmarks), committed to git, then a few edits from two
// machines and one conflict copy: what every page has to show. Built
// once per test binary (about 10 s).
func benchStore(b *testing.B) string {
	benchOnce.Do(func() {
		benchHome, benchErr = os.MkdirTemp("", "anamnesis-webui-bench-")
		if benchErr != nil {
			return
		}
		g := synth.NewGen(synth.NewVocab(20000, 1), 10000)
		tree := note.Tree{Root: filepath.Join(benchHome, note.PortableDir), Scope: note.ScopePortable}
		if _, benchErr = synth.Fill(tree, g, 10000, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)); benchErr != nil {
			return
		}
		var s *anamnesis.Store
		if s, benchErr = anamnesis.Open(ctx, benchHome, anamnesis.Options{MachineID: "bench"}); benchErr != nil {
			return
		}
		defer s.Close()
		if _, benchErr = s.Sync(ctx, anamnesis.SyncOptions{}); benchErr != nil { // commits every note
			return
		}
		hits, err := s.List(ctx, anamnesis.Filter{Limit: 5})
		if benchErr = err; err != nil {
			return
		}
		for i, h := range hits {
			n, _, err := s.Get(ctx, h.ID)
			if benchErr = err; err != nil {
				return
			}
			n.Body += "\n\nEdited on the bench machine."
			if _, benchErr = s.Update(ctx, n); benchErr != nil {
				return
			}
			if i == 0 { // a conflict copy of the newest note, as a sync makes one
				c := *n
				c.ID = note.New(n.Type, n.Title, "", time.Now()).ID
				c.Body = "Another machine's version of this note."
				c.SetExtra("conflict_of", n.ID)
				rel := n.Type + "/" + n.ID + ".conflict-0badcafe.md"
				if benchErr = os.WriteFile(tree.Path(rel), note.Marshal(&c), 0o644); benchErr != nil {
					return
				}
			}
		}
		_, benchErr = s.Reconcile(ctx)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchHome
}

// BenchmarkPages10k renders each page at 10,000 notes: server time, from
// the request to the last byte in the recorder. "cold" pages start from
// empty history, fleet and filter-count caches (the first view after a
// new commit or a write);
// fleet is measured with doctor's findings already checked, since the
// page never waits for them (see slowCache).
func BenchmarkPages10k(b *testing.B) {
	home := benchStore(b)
	s, err := anamnesis.Open(ctx, home, anamnesis.Options{MachineID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	srv := newServer(b, s)
	srv.refreshSlow(true)
	all, err := s.List(ctx, anamnesis.Filter{})
	if err != nil {
		b.Fatal(err)
	}
	newest, deep := all[0], all[9000]
	cs, err := s.Conflicts(ctx)
	if err != nil || len(cs) != 1 {
		b.Fatalf("conflicts: %v %v", cs, err)
	}
	g := synth.NewGen(synth.NewVocab(20000, 1), 5)
	query := strings.ReplaceAll(g.Query(), " ", "+")
	pages := []struct {
		name, target string
		cold         bool
	}{
		{"notes", "/", false},
		{"notes-cold", "/", true},
		{"notes-page-180", "/?bu=" + deep.UpdatedAt + "&bi=" + deep.ID, false},
		{"notes-filtered", "/?type=semantic&project=github.com/example/project07", false},
		{"search", "/?q=" + query, false},
		{"note", "/note/" + newest.ID, false},
		{"note-cold", "/note/" + newest.ID, true},
		{"note-old", "/note/" + all[5000].ID, false},
		{"edit", "/note/" + newest.ID + "/edit", false},
		{"new", "/new?supersedes=" + newest.ID, false},
		{"conflicts", "/conflicts", false},
		{"fleet", "/fleet", false},
		{"fleet-cold", "/fleet", true},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if p.cold {
					srv.cache.mu.Lock()
					srv.cache.head = "cleared"
					srv.cache.mu.Unlock()
					srv.forgetFacets()
				}
				w := do(srv, "GET", p.target, nil, true, nil)
				if w.Code != http.StatusOK {
					b.Fatalf("GET %s: %d\n%s", p.target, w.Code, w.Body.String())
				}
			}
		})
	}
}
