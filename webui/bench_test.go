package webui

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
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

// benchCommits is how many commits benchStore adds on top of the one
// that commits every note: the figure for a store in daily use
// on a few machines (every Claude session's write is a commit).
const benchCommits = 5000

// benchStore is a home with 10,000 synthetic notes (internal/synth, as
// the root's benchmarks), committed to git, then benchCommits commits
// from two machines (AddCommits), a few edits through the Store and one
// conflict copy: what every page has to show. Built once per test binary
// (about 20 s).
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
		if _, benchErr = s.Sync(ctx, anamnesis.SyncOptions{}); benchErr != nil { // commits every note
			s.Close()
			return
		}
		// Closed and opened again: an open repository does not see the
		// pack fast-import adds.
		s.Close()
		if benchErr = AddCommits(tree.Root, benchCommits); benchErr != nil {
			return
		}
		if s, benchErr = anamnesis.Open(ctx, benchHome, anamnesis.Options{MachineID: "bench"}); benchErr != nil {
			return
		}
		defer s.Close()
		if _, benchErr = s.Reconcile(ctx); benchErr != nil {
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

// AddCommits adds n commits to the repository in dir (memory/) with
// git fast-import, then checks them out: edits of existing notes by
// machines "desk" and "laptop", one note edited at every tenth commit
// (its history is long), and every 25th commit a merge of a laptop
// commit made on a branch, as syncs make them. Building them through
// the Store would take minutes; fast-import takes seconds.
func AddCommits(dir string, n int) error {
	files, err := notesIn(dir)
	if err != nil {
		return err
	}
	if len(files) < 2 {
		return fmt.Errorf("%s: too few notes to edit", dir)
	}
	content := map[string][]byte{}
	read := func(rel string) ([]byte, error) {
		if c, ok := content[rel]; ok {
			return c, nil
		}
		return os.ReadFile(filepath.Join(dir, rel))
	}
	var st bytes.Buffer
	when := time.Now().Add(-time.Duration(n) * time.Minute).Unix()
	mark := 0
	edit := func(k int, rel string) (string, error) {
		c, err := read(rel)
		if err != nil {
			return "", err
		}
		c = append(append([]byte{}, c...), fmt.Sprintf("\nEdit %d.\n", k)...)
		content[rel] = c
		return fmt.Sprintf("M 100644 inline %s\ndata %d\n%s\n", rel, len(c), c), nil
	}
	commit := func(ref, machine, msg, from string, merge string, mods ...string) string {
		mark++
		when += 60
		fmt.Fprintf(&st, "commit %s\nmark :%d\nauthor %s <anamnesis@%s> %d +0000\ncommitter %s <anamnesis@%s> %d +0000\ndata %d\n%s\n",
			ref, mark, machine, machine, when, machine, machine, when, len(msg), msg)
		if from != "" {
			fmt.Fprintf(&st, "from %s\n", from)
		}
		if merge != "" {
			fmt.Fprintf(&st, "merge %s\n", merge)
		}
		for _, m := range mods {
			st.WriteString(m)
		}
		st.WriteString("\n")
		return fmt.Sprintf(":%d", mark)
	}
	hot := files[0]
	tip := "refs/heads/main^0"
	for k := 0; k < n; k++ {
		rel := files[1+k%(len(files)-1)]
		if k%10 == 0 {
			rel = hot
		}
		m, err := edit(k, rel)
		if err != nil {
			return err
		}
		switch {
		case k%25 == 24 && k+1 < n: // a laptop commit on a branch, merged
			side := commit("refs/heads/side", "laptop", "update "+rel, tip, "", m)
			k++
			rel2 := files[1+(k*7)%(len(files)-1)]
			m2, err := edit(k, rel2)
			if err != nil {
				return err
			}
			mine := commit("refs/heads/main", "desk", "update "+rel2, tip, "", m2)
			tip = commit("refs/heads/main", "desk", "sync: merge laptop", mine, side, m)
		default:
			machine := "desk"
			if k%3 == 0 {
				machine = "laptop"
			}
			tip = commit("refs/heads/main", machine, "update "+rel, tip, "", m)
		}
	}
	st.WriteString("reset refs/heads/side\nfrom 0000000000000000000000000000000000000000\n\n")
	cmd := exec.Command("git", "fast-import", "--quiet", "--force")
	cmd.Dir, cmd.Stdin = dir, &st
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git fast-import: %w: %s", err, out)
	}
	if out, err := exec.Command("git", "-C", dir, "reset", "--quiet", "--hard", "main").CombinedOutput(); err != nil {
		return fmt.Errorf("git reset: %w: %s", err, out)
	}
	return nil
}

// notesIn lists the note files of memory/ (paths inside it, sorted).
func notesIn(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") && !strings.Contains(p, ".conflict-") {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}

// BenchmarkPages10k renders each page at 10,000 notes and 5,000 commits:
// server time, from the request to the last byte in the recorder.
// "cold" list and fleet pages start from empty filter-count caches;
// note-after-commit makes a commit (a write through the Store, not
// timed) before each view, so the version index extends by one commit,
// as after every Claude session's write; note-restart is a new server
// reading the kept version index (state/webui-versions.bin) and showing
// a note: what the first page of a restarted `anamnesis ui` costs, from
// the moment the server exists. The first build of the
// index is reported once (BuildVersions). Fleet is measured with
// doctor's findings already checked, since the page never waits for
// them (see slowCache).
func BenchmarkPages10k(b *testing.B) {
	home := benchStore(b)
	defer os.RemoveAll(home) // the only benchmark that uses it
	s, err := anamnesis.Open(ctx, home, anamnesis.Options{MachineID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	os.Remove(filepath.Join(home, "state", "webui-versions.bin"))
	start := time.Now()
	srv := newServer(b, s)
	// Printed rather than logged: it is a figure make bench shows.
	fmt.Printf("version index built from scratch in the background: %d commits in %v\n", len(srv.vers.data.Commits), time.Since(start).Round(time.Millisecond))
	srv.refreshSlow(true)
	all, err := s.List(ctx, anamnesis.Filter{})
	if err != nil {
		b.Fatal(err)
	}
	files, err := notesIn(filepath.Join(home, note.PortableDir))
	if err != nil {
		b.Fatal(err)
	}
	hotID := strings.TrimSuffix(filepath.Base(files[0]), ".md")
	newest, deep := all[0], all[9000]
	cs, err := s.Conflicts(ctx)
	if err != nil || len(cs) != 1 {
		b.Fatalf("conflicts: %v %v", cs, err)
	}
	g := synth.NewGen(synth.NewVocab(20000, 1), 5)
	query := strings.ReplaceAll(g.Query(), " ", "+")
	type page struct {
		name, target string
		cold         bool
	}
	pages := []page{
		{"notes", "/", false},
		{"notes-cold", "/", true},
		{"notes-page-180", "/?bu=" + deep.UpdatedAt + "&bi=" + deep.ID, false},
		{"notes-filtered", "/?type=semantic&project=github.com/example/project07", false},
		{"search", "/?q=" + query, false},
		{"note", "/note/" + newest.ID, false},
		{"note-hot", "/note/" + hotID, false}, // 500 versions, 20 shown
		{"note-hot-oldest", "/note/" + hotID + "?from=490", false},
		{"note-old", "/note/" + all[5000].ID, false},
		{"edit", "/note/" + newest.ID + "/edit", false},
		{"new", "/new?supersedes=" + newest.ID, false},
		{"conflicts", "/conflicts", false},
		{"fleet", "/fleet", false},
		{"fleet-cold", "/fleet", true},
	}
	get := func(b *testing.B, srv *Server, target string) {
		w := do(srv, "GET", target, nil, true, nil)
		if w.Code != http.StatusOK {
			b.Fatalf("GET %s: %d\n%s", target, w.Code, w.Body.String())
		}
	}
	// cpu-ms/op is the process's CPU time per page (GC included): what
	// the page costs on an idle machine, where wall time (ns/op) also
	// counts waiting for the CPU behind other work.
	reportCPU := func(b *testing.B, start time.Duration) {
		if c := cpuTime(); c > 0 {
			b.ReportMetric(float64(c-start)/float64(b.N)/1e6, "cpu-ms/op")
		}
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			start := cpuTime()
			for i := 0; i < b.N; i++ {
				if p.cold {
					srv.forgetFacets()
				}
				get(b, srv, p.target)
			}
			reportCPU(b, start)
		})
	}
	b.Run("note-after-commit", func(b *testing.B) {
		var cpu time.Duration
		defer func() {
			if cpu > 0 {
				b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
			}
		}()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			n, _, err := s.Get(ctx, all[100+i%50].ID)
			if err != nil {
				b.Fatal(err)
			}
			n.Body += fmt.Sprintf("\n\nBench edit %d.", i)
			if _, err := s.Update(ctx, n); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			c := cpuTime()
			get(b, srv, "/note/"+hotID)
			cpu += cpuTime() - c
		}
	})
	srv.vers.mu.Lock()
	srv.vers.save()
	srv.vers.mu.Unlock()
	b.Run("note-restart", func(b *testing.B) {
		var cpu time.Duration
		defer func() {
			if cpu > 0 {
				b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
			}
		}()
		for i := 0; i < b.N; i++ {
			b.StopTimer() // parsing the templates is not the page's time
			srv, err := New(ctx, s, Options{Addr: testAddr, Token: testToken, CSRF: testCSRF})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			c := cpuTime()
			srv.waitVersions() // the kept index, loaded in the background
			get(b, srv, "/note/"+hotID)
			cpu += cpuTime() - c
		}
	})
}

// BenchmarkVersionIndexLoad decodes a kept version index the size of the
// bench store's (10,000 files, 5,200 commits, 15,000 versions): the part
// of a restarted server's first note page that is not the page itself.
func BenchmarkVersionIndexLoad(b *testing.B) {
	d := versionData{Format: versionFormat, Head: strings.Repeat("a", 40), Paths: map[string][]changeRec{}}
	for i := range 5200 {
		d.Commits = append(d.Commits, commitRec{Hash: [20]byte{byte(i), byte(i >> 8)}, Unix: int64(1e9 + i), Machine: []string{"desk", "laptop"}[i%2],
			Subject: fmt.Sprintf("anamnesis: sync from desk at 2026-11-25T16:%02d:00+00:00", i%60), Gen: int32(i + 1)})
	}
	for i := range 10000 {
		p := fmt.Sprintf("semantic/01M89R%020d.md", i)
		d.Paths[p] = []changeRec{{Commit: 0, Added: true, Blob: [20]byte{byte(i)}}}
		if i < 5000 {
			d.Paths[p] = append(d.Paths[p], changeRec{Commit: int32(i + 1), Blob: [20]byte{byte(i), 1}})
		}
	}
	data := encodeVersions(&d)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := decodeVersions(data); err != nil {
			b.Fatal(err)
		}
	}
}
