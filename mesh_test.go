package anamnesis

import (
	"fmt"
	"io/fs"
	"maps"
	"math/rand"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
)

// TestMeshConvergence: three machines, no hub. Each serves its memory/
// read-only on loopback and syncs by fetching from the other two. After
// random writes and edits and a few rounds of syncs, all trees are
// identical and no line anyone wrote is lost.
func TestMeshConvergence(t *testing.T) {
	const machines = 3
	homes := make([]string, machines)
	urls := make([]string, machines)
	for i := range homes {
		homes[i] = t.TempDir()
		s, err := Open(ctx, homes[i], Options{MachineID: fmt.Sprintf("m%d", i), Create: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.EnsureRepo(ctx); err != nil {
			t.Fatal(err)
		}
		s.Close()
		srv := httptest.NewServer(&gitsync.Handler{GitDir: filepath.Join(homes[i], "memory", ".git"), Auth: gitsync.LoopbackAuth{}})
		t.Cleanup(srv.Close)
		urls[i] = srv.URL + "/memory"
	}
	stores := make([]*Store, machines)
	for i := range homes {
		var others []string
		for j := range urls {
			if j != i {
				others = append(others, urls[j])
			}
		}
		s, err := Open(ctx, homes[i], Options{MachineID: fmt.Sprintf("m%d", i), Remote: "peers:" + strings.Join(others, ",")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	r := rand.New(rand.NewSource(11))
	written := map[string]bool{}
	seq := 0
	for round := 0; round < 30; round++ {
		i := r.Intn(machines)
		s := stores[i]
		list, _ := s.List(ctx, indexFilterAll())
		if r.Intn(3) > 0 || len(list) == 0 {
			seq++
			line := fmt.Sprintf("line %d from m%d", seq, i)
			written[line] = true
			if _, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: fmt.Sprintf("note %d", seq), Body: line}); err != nil {
				t.Fatal(err)
			}
		} else {
			h := list[r.Intn(len(list))]
			n, path, err := s.Get(ctx, h.ID)
			if err != nil {
				t.Fatal(err)
			}
			seq++
			line := fmt.Sprintf("line %d from m%d", seq, i)
			written[line] = true
			n.Body += "\n" + line
			if err := note.WriteFileAtomic(filepath.Join(homes[i], path), note.Marshal(n)); err != nil {
				t.Fatal(err)
			}
		}
		if r.Intn(2) == 0 {
			if _, err := s.Sync(ctx, SyncOptions{}); err != nil {
				t.Fatalf("m%d sync: %v", i, err)
			}
		}
	}
	for round := 0; round < 3; round++ {
		for i, s := range stores {
			rep, err := s.Sync(ctx, SyncOptions{})
			if err != nil {
				t.Fatalf("final m%d sync: %v", i, err)
			}
			for _, p := range rep.Peers {
				if p.Error != "" {
					t.Fatalf("m%d fetching %s: %s", i, p.URL, p.Error)
				}
			}
		}
	}
	// Once converged, idle rounds must not mint commits: two peers that
	// merged each other's head would otherwise add a merge per round.
	heads := func() []string {
		var out []string
		for i, s := range stores {
			rep, err := s.Sync(ctx, SyncOptions{})
			if err != nil {
				t.Fatalf("idle m%d sync: %v", i, err)
			}
			out = append(out, rep.Head)
		}
		return out
	}
	settled := heads()
	for round := 0; round < 3; round++ {
		if now := heads(); fmt.Sprint(now) != fmt.Sprint(settled) {
			t.Fatalf("idle round %d moved heads: %v -> %v", round, settled, now)
		}
	}
	if settled[0] == "" || settled[0] != settled[1] || settled[1] != settled[2] {
		t.Errorf("converged machines have different heads: %v", settled)
	}
	trees := make([]map[string]string, machines)
	for i := range homes {
		trees[i] = readTree(t, filepath.Join(homes[i], "memory"))
	}
	for i := 1; i < machines; i++ {
		if fmt.Sprint(slices.Sorted(maps.Keys(trees[i]))) != fmt.Sprint(slices.Sorted(maps.Keys(trees[0]))) {
			t.Fatalf("m%d has different files than m0", i)
		}
		for p, c := range trees[0] {
			if trees[i][p] != c {
				t.Fatalf("%s differs between m0 and m%d", p, i)
			}
		}
	}
	all := ""
	for _, c := range trees[0] {
		all += c
	}
	for line := range written {
		if !strings.Contains(all, line) {
			t.Errorf("lost: %q", line)
		}
	}
	// And the index agrees: every line is searchable on every machine.
	for i, s := range stores {
		hits, err := s.Search(ctx, "line", indexFilterK(1000))
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) < len(trees[0])-countCopies(trees[0]) {
			t.Errorf("m%d indexes %d notes, tree has %d", i, len(hits), len(trees[0]))
		}
	}
}

func readTree(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		data, _ := os.ReadFile(p)
		out[rel] = string(data)
		return nil
	})
	return out
}

func countCopies(m map[string]string) int {
	n := 0
	for p := range m {
		if strings.Contains(p, ".conflict-") {
			n++
		}
	}
	return n
}

func indexFilterAll() index.Filter    { return index.Filter{} }
func indexFilterK(k int) index.Filter { return index.Filter{Limit: k} }

// TestPeerListNoneReachable: a sync whose listed peers all fail has
// fetched nothing the user asked for: an error naming each peer, never
// a quiet success. One answering peer is enough to succeed.
func TestPeerListNoneReachable(t *testing.T) {
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return "http://" + ln.Addr().String() + "/memory"
	}
	down1, down2 := closed(), closed()
	home := t.TempDir()
	s, err := Open(ctx, home, Options{MachineID: "m", Create: true, Remote: "peers:" + down1 + "," + down2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "kept", Body: "local"}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Sync(ctx, SyncOptions{Timeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "2 peers probed, none reachable: ") ||
		!strings.Contains(err.Error(), down1) || !strings.Contains(err.Error(), down2) {
		t.Fatalf("want the count and each peer: %v", err)
	}

	up := t.TempDir()
	u, err := Open(ctx, up, Options{MachineID: "up", Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.EnsureRepo(ctx); err != nil {
		t.Fatal(err)
	}
	u.Close()
	srv := httptest.NewServer(&gitsync.Handler{GitDir: filepath.Join(up, "memory", ".git"), Auth: gitsync.LoopbackAuth{}})
	defer srv.Close()
	s.Close()
	s, err = Open(ctx, home, Options{MachineID: "m", Remote: "peers:" + down1 + "," + srv.URL + "/memory"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Sync(ctx, SyncOptions{Timeout: 5 * time.Second})
	if err != nil || len(rep.Peers) != 2 {
		t.Fatalf("one peer answering: %+v %v", rep.Peers, err)
	}
}
