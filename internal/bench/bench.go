package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/synth"
	"github.com/anamnesis-memory/anamnesis/note"
)

// Config says what to measure.
type Config struct {
	Sizes   []int  // store sizes in notes
	Dir     string // where stores are generated (reused between runs)
	Binary  string // anamnesis binary for process timings ("" skips them)
	Queries int    // in-process queries per size
	Log     io.Writer
}

// Figures are the measurements for one store size.
type Figures struct {
	Notes           int
	Generate        time.Duration
	FullReindex     time.Duration
	Reconcile10     time.Duration
	ReconcileNone   time.Duration
	SearchP50       time.Duration // Zipf word queries: mostly common words
	SearchP99       time.Duration
	PromptP50       time.Duration // prompt-like queries about one note
	PromptP99       time.Duration
	RareP50         time.Duration // prompts naming a note's distinctive words
	RareP99         time.Duration
	Paths           string // how searches were answered (maxscore/floored/full)
	ProcSearchP50   time.Duration
	ProcSearchP95   time.Duration
	WritesPerSecond float64
	ProcWriteP50    time.Duration
	HookStartP50    time.Duration // `anamnesis hook session-start` as a process
	HookPromptP50   time.Duration // `anamnesis hook prompt`
	HookEndP50      time.Duration // `anamnesis hook session-end` until it returns
}

// Run measures every size in cfg.
func Run(ctx context.Context, cfg Config) ([]Figures, error) {
	var out []Figures
	for _, n := range cfg.Sizes {
		f, err := measure(ctx, cfg, n)
		if err != nil {
			return out, fmt.Errorf("%d notes: %w", n, err)
		}
		out = append(out, f)
	}
	return out, nil
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// ensureStore generates a store of n notes under dir unless a complete
// one is already there.
func ensureStore(cfg Config, n int) (string, time.Duration, error) {
	home := filepath.Join(cfg.Dir, fmt.Sprintf("store-%d", n))
	marker := filepath.Join(home, ".bench-complete")
	if data, err := os.ReadFile(marker); err == nil && strings.TrimSpace(string(data)) == strconv.Itoa(n) {
		return home, 0, nil
	}
	os.RemoveAll(home)
	cfg.logf("generating %d notes in %s", n, home)
	start := time.Now()
	g := synth.NewGen(synth.NewVocab(20000, 1), int64(n))
	tree := note.Tree{Root: filepath.Join(home, note.PortableDir), Scope: note.ScopePortable}
	if _, err := synth.Fill(tree, g, n, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		return "", 0, err
	}
	took := time.Since(start)
	return home, took, os.WriteFile(marker, []byte(strconv.Itoa(n)), 0o644)
}

func measure(ctx context.Context, cfg Config, n int) (Figures, error) {
	f := Figures{Notes: n}
	home, gen, err := ensureStore(cfg, n)
	if err != nil {
		return f, err
	}
	f.Generate = gen
	// Start from no index at all, as a fresh clone of memory/ would.
	for _, s := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(home, anamnesis.IndexFile+s))
	}
	// Writes of earlier runs live in local/; drop them so sizes stay exact.
	os.RemoveAll(filepath.Join(home, note.LocalDir))
	s, err := anamnesis.Open(ctx, home, anamnesis.Options{MachineID: "bench"})
	if err != nil {
		return f, err
	}
	defer s.Close()
	paths, err := listPaths(filepath.Join(home, note.PortableDir))
	if err != nil {
		return f, err
	}
	if err := measureIndexing(ctx, cfg, s, home, paths, &f); err != nil {
		return f, err
	}
	g := synth.NewGen(synth.NewVocab(20000, 1), 99)
	queries := make([]string, cfg.Queries)
	for i := range queries {
		queries[i] = g.Query()
	}
	prompts, err := measureSearches(ctx, cfg, s, queries, paths, &f)
	if err != nil {
		return f, err
	}
	const writes = 300
	t0 := time.Now()
	for i := 0; i < writes; i++ {
		if _, _, err := s.Write(ctx, anamnesis.WriteRequest{Type: "semantic", Title: g.Words(5), Body: g.Body(), Scope: note.ScopeMachineLocal}); err != nil {
			return f, err
		}
	}
	f.WritesPerSecond = writes / time.Since(t0).Seconds()
	cfg.logf("  %.0f writes/s", f.WritesPerSecond)

	if cfg.Binary != "" {
		env := append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=bench")
		if err := measureProcesses(ctx, cfg, env, g, queries, &f); err != nil {
			return f, err
		}
		if err := measureHooks(ctx, cfg, home, env, prompts, &f); err != nil {
			return f, err
		}
	}
	return f, nil
}

// measureIndexing times a full rebuild of the n notes, then reconciles
// with nothing changed and with ten files touched.
func measureIndexing(ctx context.Context, cfg Config, s *anamnesis.Store, home string, paths []string, f *Figures) error {
	start := time.Now()
	rep, err := s.Rebuild(ctx)
	if err != nil {
		return err
	}
	f.FullReindex = time.Since(start)
	if rep.Indexed != f.Notes {
		return fmt.Errorf("rebuild indexed %d notes, want %d", rep.Indexed, f.Notes)
	}
	cfg.logf("  full reindex %v", f.FullReindex)

	if f.ReconcileNone, err = timeMedian(5, func() error { _, err := s.Reconcile(ctx); return err }); err != nil {
		return err
	}
	round := 0
	f.Reconcile10, err = timeMedianPrep(5, func() error {
		round++
		return touch(filepath.Join(home, note.PortableDir), paths[round*10:round*10+10], round)
	}, func() error {
		r, err := s.Reconcile(ctx)
		if err == nil && r.Updated != 10 {
			err = fmt.Errorf("reconcile updated %d notes, want 10", r.Updated)
		}
		return err
	})
	if err != nil {
		return err
	}
	cfg.logf("  reconcile 10 changed %v, nothing changed %v", f.Reconcile10, f.ReconcileNone)
	return nil
}

// measureSearches times in-process searches of three kinds: zipf-drawn
// words, prompts made of note text and distinctive words. It returns the
// prompts, which the hook figures reuse.
func measureSearches(ctx context.Context, cfg Config, s *anamnesis.Store, queries, paths []string, f *Figures) ([]string, error) {
	for _, q := range queries[:min(100, len(queries))] { // warm the page cache and statement cache
		s.Search(ctx, q, index.Filter{})
	}
	var err error
	if f.SearchP50, f.SearchP99, err = searchLatency(ctx, s, queries); err != nil {
		return nil, err
	}
	cfg.logf("  search (zipf words) p50 %v p99 %v over %d queries", f.SearchP50, f.SearchP99, len(queries))
	prompts, err := promptQueries(paths, cfg.Queries)
	if err != nil {
		return nil, err
	}
	if f.PromptP50, f.PromptP99, err = searchLatency(ctx, s, prompts); err != nil {
		return nil, err
	}
	cfg.logf("  search (prompts) p50 %v p99 %v over %d queries", f.PromptP50, f.PromptP99, len(prompts))
	rare, err := distinctiveQueries(ctx, s, paths, cfg.Queries)
	if err != nil {
		return nil, err
	}
	if f.RareP50, f.RareP99, err = searchLatency(ctx, s, rare); err != nil {
		return nil, err
	}
	pc := s.SearchPaths()
	f.Paths = fmt.Sprintf("%d/%d/%d/%d", pc.Postings, pc.MaxScore, pc.Floored, pc.Full)
	cfg.logf("  search (distinctive words) p50 %v p99 %v; answered postings/fts5 maxscore/floored/full %s", f.RareP50, f.RareP99, f.Paths)
	return prompts, nil
}

// searchLatency runs each query once and returns the p50 and p99.
func searchLatency(ctx context.Context, s *anamnesis.Store, queries []string) (p50, p99 time.Duration, err error) {
	lat := make([]time.Duration, 0, len(queries))
	for _, q := range queries {
		t0 := time.Now()
		if _, err := s.Search(ctx, q, index.Filter{}); err != nil {
			return 0, 0, err
		}
		lat = append(lat, time.Since(t0))
	}
	return pct(lat, 50), pct(lat, 99), nil
}

// measureProcesses times `anamnesis search` and `anamnesis write` as
// whole processes of cfg.Binary.
func measureProcesses(ctx context.Context, cfg Config, env []string, g *synth.Gen, queries []string, f *Figures) error {
	var procs []time.Duration
	for i := 0; i < 40; i++ {
		d, err := timeProc(ctx, cfg.Binary, env, "", "search", queries[i%len(queries)])
		if err != nil {
			return err
		}
		procs = append(procs, d)
	}
	f.ProcSearchP50, f.ProcSearchP95 = pct(procs[5:], 50), pct(procs[5:], 95)
	var wr []time.Duration
	for i := 0; i < 20; i++ {
		d, err := timeProc(ctx, cfg.Binary, env, g.Body(), "write", "--type", "episodic", "--title", g.Words(4), "--scope", "machine-local")
		if err != nil {
			return err
		}
		wr = append(wr, d)
	}
	f.ProcWriteP50 = pct(wr, 50)
	cfg.logf("  `anamnesis search` p50 %v p95 %v; `anamnesis write` p50 %v", f.ProcSearchP50, f.ProcSearchP95, f.ProcWriteP50)
	return nil
}

// measureHooks times the Claude Code hooks as Claude Code runs them: a
// fresh process with JSON on stdin, in a project directory of the store.
// They run on a copy of the store, since session-end writes and commits
// notes and the generated store is reused between runs.
func measureHooks(ctx context.Context, cfg Config, src string, env []string, prompts []string, f *Figures) error {
	home := filepath.Join(cfg.Dir, "hooks-home")
	env = append(append([]string{}, env...), "ANAMNESIS_HOME="+home)
	proj, err := hookFixture(ctx, cfg, cfg.Binary, src, home, env)
	if err != nil {
		return err
	}
	transcript := filepath.Join(cfg.Dir, "hook-transcript.jsonl")
	if err := writeHookTranscript(transcript, proj); err != nil {
		return err
	}
	run := func(n int, stdin func(i int) string, args ...string) (time.Duration, error) {
		var ds []time.Duration
		for i := 0; i < n; i++ {
			d, err := timeProc(ctx, cfg.Binary, env, stdin(i), args...)
			if err != nil {
				return 0, err
			}
			ds = append(ds, d)
		}
		return pct(ds[2:], 50), nil
	}
	if f.HookStartP50, err = run(22, func(i int) string {
		return fmt.Sprintf(`{"session_id":"start-%d","cwd":%q,"hook_event_name":"SessionStart","source":"clear"}`, i, proj)
	}, "hook", "session-start"); err != nil {
		return err
	}
	if f.HookPromptP50, err = run(22, func(i int) string {
		b, _ := json.Marshal(map[string]string{"session_id": fmt.Sprintf("prompt-%d", i), "cwd": proj, "prompt": prompts[i%len(prompts)]})
		return string(b)
	}, "hook", "prompt"); err != nil {
		return err
	}
	if f.HookEndP50, err = run(12, func(i int) string {
		return fmt.Sprintf(`{"session_id":"end-%d","transcript_path":%q,"cwd":%q}`, i, transcript, proj)
	}, "hook", "session-end"); err != nil {
		return err
	}
	cfg.logf("  hooks: session-start p50 %v, prompt p50 %v, session-end p50 %v", f.HookStartP50, f.HookPromptP50, f.HookEndP50)
	return nil
}

// writeHookTranscript writes the transcript the session-end figures
// capture: 200 prompts and answers in proj, each answer editing a file.
func writeHookTranscript(path, proj string) error {
	var tr strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&tr, `{"type":"user","uuid":"u%d","sessionId":"bench-session","cwd":%q,"message":{"role":"user","content":"question %d about the ingest pipeline"}}`+"\n", i, proj, i)
		fmt.Fprintf(&tr, `{"type":"assistant","uuid":"a%d","sessionId":"bench-session","message":{"role":"assistant","content":[{"type":"text","text":"answer %d"},{"type":"tool_use","name":"Edit","input":{"file_path":"/src/f%d.go"}}]}}`+"\n", i, i, i%7)
	}
	return os.WriteFile(path, []byte(tr.String()), 0o644)
}

// hookFixture copies the store at src to home, indexes it (untimed) with
// bin, and makes the project directory hooks run in, whose path it
// returns.
func hookFixture(ctx context.Context, cfg Config, bin, src, home string, env []string) (string, error) {
	os.RemoveAll(home)
	if err := copyTree(filepath.Join(src, note.PortableDir), filepath.Join(home, note.PortableDir)); err != nil {
		return "", err
	}
	if _, err := timeProc(ctx, bin, env, "", "reindex"); err != nil {
		return "", err
	}
	proj := filepath.Join(cfg.Dir, "hook-project")
	os.MkdirAll(filepath.Join(proj, ".anamnesis"), 0o755)
	if err := os.WriteFile(filepath.Join(proj, ".anamnesis", "project"), []byte("github.com/example/project03\n"), 0o644); err != nil {
		return "", err
	}
	return proj, nil
}

// promptQueries builds questions a user might ask about one note: a
// frame of function words around three words taken from the note.
func promptQueries(paths []string, n int) ([]string, error) {
	frames := []string{"how do I %s the %s with %s", "what did we decide about %s and %s for the %s",
		"why does %s fail when %s is %s", "remind me of the %s %s %s notes", "is there a way to %s a %s in %s"}
	var out []string
	for i := 0; i < n; i++ {
		data, err := os.ReadFile(paths[(i*7919)%len(paths)])
		if err != nil {
			return nil, err
		}
		nt, err := note.Parse(data)
		if err != nil {
			return nil, err
		}
		w := strings.Fields(strings.NewReplacer(".", " ", "\n", " ").Replace(nt.Body))
		out = append(out, fmt.Sprintf(frames[i%len(frames)], w[(i*31)%len(w)], w[(i*17+5)%len(w)], w[(i*13+9)%len(w)]))
	}
	return out, nil
}

// distinctiveQueries frame the two rarest words of a note (fewest notes
// containing them, by the index's own counts) with one common body word:
// a user asking about something specific they told Claude before.
func distinctiveQueries(ctx context.Context, s *anamnesis.Store, paths []string, n int) ([]string, error) {
	frames := []string{"how do I %s the %s with %s", "what did we decide about %s and %s for the %s",
		"why does %s fail when %s is %s", "remind me of the %s %s %s notes", "is there a way to %s a %s in %s"}
	var out []string
	for i := 0; i < n; i++ {
		data, err := os.ReadFile(paths[(i*7919+13)%len(paths)])
		if err != nil {
			return nil, err
		}
		nt, err := note.Parse(data)
		if err != nil {
			return nil, err
		}
		w := strings.Fields(strings.NewReplacer(".", " ", "\n", " ").Replace(strings.ToLower(nt.Body)))
		rare, err := s.RarestWords(ctx, w, 2)
		if err != nil {
			return nil, err
		}
		for len(rare) < 2 {
			rare = append(rare, w[0])
		}
		out = append(out, fmt.Sprintf(frames[i%len(frames)], rare[0], w[(i*17+5)%len(w)], rare[1]))
	}
	return out, nil
}

func listPaths(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			out = append(out, p)
		}
		return err
	})
	sort.Strings(out)
	return out, err
}

// touch edits files the way an editor would: new content, new mtime.
func touch(_ string, paths []string, round int) error {
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		data = append(data[:len(data)-1], []byte(fmt.Sprintf(" edited in round %d.\n", round))...)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func timeMedian(runs int, fn func() error) (time.Duration, error) {
	return timeMedianPrep(runs, func() error { return nil }, fn)
}

func timeMedianPrep(runs int, prep, fn func() error) (time.Duration, error) {
	var ds []time.Duration
	for i := 0; i < runs; i++ {
		if err := prep(); err != nil {
			return 0, err
		}
		t0 := time.Now()
		if err := fn(); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t0))
	}
	return pct(ds, 50), nil
}

func timeProc(ctx context.Context, bin string, env []string, stdin string, args ...string) (time.Duration, error) {
	d, _, err := timeProcCPU(ctx, bin, env, stdin, args...)
	return d, err
}

// timeProcCPU is timeProc that also returns the CPU time (user + system)
// the process used: on a machine shared with other work, wall time
// includes waiting for a core, CPU time much less so.
func timeProcCPU(ctx context.Context, bin string, env []string, stdin string, args ...string) (wall, cpu time.Duration, err error) {
	wall, cpu, _, err = timeProcRSS(ctx, bin, env, stdin, args...)
	return wall, cpu, err
}

// pct returns the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (p*len(s) + 99) / 100
	if i < 1 {
		i = 1
	}
	return s[i-1]
}
