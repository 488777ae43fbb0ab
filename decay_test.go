package anamnesis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/index"
)

// TestDecayFavoursRecentNotes: without decay the older note that matches
// more query words ranks first; with a short decay constant the recent
// one does; recall_decay_days in config.json turns it on, and an explicit
// option turns it off again.
func TestDecayFavoursRecentNotes(t *testing.T) {
	home := t.TempDir()
	clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	open := func(days float64) *Store {
		s, err := Open(ctx, home, Options{MachineID: "box", Now: func() time.Time { return clock }, DecayDays: days, Create: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open(0)
	old, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "sqlite busy timeout", Body: "Set the sqlite busy timeout to avoid lock errors."})
	if err != nil {
		t.Fatal(err)
	}
	clock = clock.AddDate(0, 6, 0)
	recent, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "sqlite", Body: "Use WAL mode."})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	first := func(s *Store) string {
		t.Helper()
		defer s.Close()
		hits, err := s.Search(ctx, "sqlite busy timeout lock", index.Filter{Limit: 1})
		if err != nil || len(hits) != 1 {
			t.Fatalf("search: %v, %d hits", err, len(hits))
		}
		return hits[0].ID
	}
	if got := first(open(0)); got != old.ID {
		t.Fatalf("without decay the better match should win, got %s", got)
	}
	if got := first(open(30)); got != recent.ID {
		t.Errorf("with a 30-day decay the note from six months later should win, got %s", got)
	}
	if got := first(open(100000)); got != old.ID {
		t.Errorf("a very long decay should keep the BM25 order, got %s", got)
	}
	os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{"recall_decay_days": 30}`), 0o600)
	if got := first(open(0)); got != recent.ID {
		t.Errorf("recall_decay_days in config.json is ignored, got %s", got)
	}
	if got := first(open(-1)); got != old.ID {
		t.Errorf("an explicit off does not override the config, got %s", got)
	}
	os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{"recall_decay_days": "soon"}`), 0o600)
	if _, err := Open(ctx, home, Options{MachineID: "box"}); err == nil || !strings.Contains(err.Error(), "recall_decay_days") {
		t.Errorf("a bad recall_decay_days must be refused by name, got %v", err)
	}
}
