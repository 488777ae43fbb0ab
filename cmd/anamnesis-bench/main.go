// Command anamnesis-bench prints the speed figures of `make bench`:
// full reindex, reconcile, search latency (in-process and as a CLI
// process) and write throughput on synthetic stores, next to the targets
// the issues set.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/embed"
	"github.com/anamnesis-memory/anamnesis/internal/bench"
)

func main() {
	sizes := flag.String("sizes", "10000,100000", "comma-separated store sizes")
	dir := flag.String("dir", "bench-out", "directory for generated stores (reused between runs)")
	bin := flag.String("bin", "", "anamnesis binary for process timings (empty: skip)")
	queries := flag.Int("queries", 2000, "in-process search queries per size")
	syncSizes := flag.String("sync-sizes", "10000", "store sizes for the sync figures (empty: skip)")
	scaleSizes := flag.String("scale-sizes", "1000,10000,100000", "store sizes for the scale figures, each a process of -bin with its peak RSS (empty: skip); -bin may list several binaries, comma-separated, run interleaved")
	scaleRounds := flag.Int("scale-rounds", 1, "rounds of the scale figures per size and binary (medians across rounds)")
	locomoDir := flag.String("locomo", "", "LoCoMo conversation directory: also score recall on it")
	recallOnly := flag.Bool("recall-only", false, "only the LoCoMo recall figures")
	embedder := flag.String("embedder", "", "KIND,URL,MODEL of an embedding server (ollama or openai) for the recall figures' semantic leg, e.g. ollama,http://127.0.0.1:11434,nomic-embed-text")
	mode := flag.String("mode", "", "search mode for the recall figures: fts, vec or hybrid (default: hybrid with -embedder, else fts)")
	loop := flag.Bool("loop", false, "only the memory-in-the-loop scenario (two machines, scripted sessions, probes); needs -bin")
	loopHooks := flag.Int("loop-hook-size", 10000, "store size for the loop scenario's hook timings (0: skip)")
	startup := flag.Bool("startup", false, "only the start-up figures (an empty process, --version, the hooks at 10,000 notes); -bin may list several binaries, comma-separated, to compare them")
	startupRuns := flag.Int("startup-runs", 41, "timed runs per start-up figure and binary")
	fillVectors := flag.String("fill-vectors", "", "internal to the scale figures: give every note of the index at `PATH` a vector, in a process of its own")
	flag.Parse()
	if *fillVectors != "" {
		if err := bench.FillVectors(context.Background(), *fillVectors); err != nil {
			fmt.Fprintf(os.Stderr, "anamnesis-bench: fill vectors: %v\n", err)
			os.Exit(bench.FillVectorsExit(err))
		}
		return
	}
	switch {
	case *startup:
		if *bin == "" {
			fail(2, "-startup needs -bin")
		}
		if err := printStartup(strings.Split(*bin, ","), *dir, *startupRuns); err != nil {
			fail(1, "startup: %v", err)
		}
		return
	case *loop:
		f, err := bench.RunLoop(context.Background(), bench.LoopConfig{Binary: *bin, Dir: *dir, HookSize: *loopHooks, Log: os.Stderr})
		if err != nil {
			fail(1, "loop: %v", err)
		}
		printLoop(f)
		return
	}
	if *recallOnly || *locomoDir != "" {
		printRecall(*locomoDir, *dir, *embedder, *mode)
		if *recallOnly {
			return
		}
		fmt.Println()
	}
	cfg := bench.Config{Dir: *dir, Binary: *bin, Queries: *queries, Log: os.Stderr}
	if strings.TrimSpace(*sizes) == "" {
		// The scale figures alone (`make bench-scale`).
		if err := printScale(cfg, *scaleSizes, *scaleRounds); err != nil {
			fail(1, "scale: %v", err)
		}
		return
	}
	runSizes(cfg, *sizes, *startupRuns, *scaleSizes, *scaleRounds, *syncSizes)
}

// runSizes prints the figures of each store size in sizes, then the
// start-up, scale and sync figures.
func runSizes(cfg bench.Config, sizes string, startupRuns int, scaleSizes string, scaleRounds int, syncSizes string) {
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 100 {
			fail(2, "bad size %q (at least 100)", s)
		}
		cfg.Sizes = append(cfg.Sizes, n)
	}
	figs, err := bench.Run(context.Background(), cfg)
	if err != nil {
		fail(1, "%v", err)
	}
	printFigures(figs)
	if cfg.Binary != "" {
		fmt.Println()
		if err := printStartup([]string{cfg.Binary}, cfg.Dir, startupRuns); err != nil {
			fail(1, "startup: %v", err)
		}
	}
	if cfg.Binary != "" && strings.TrimSpace(scaleSizes) != "" {
		if err := printScale(cfg, scaleSizes, scaleRounds); err != nil {
			fail(1, "scale: %v", err)
		}
	}
	printSync(cfg, syncSizes)
}

// fail prints one line to stderr and exits with code.
func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "anamnesis-bench: "+format+"\n", args...)
	os.Exit(code)
}

// printRecall scores recall on the LoCoMo conversations in locomoDir.
func printRecall(locomoDir, dir, embedder, mode string) {
	if locomoDir == "" {
		fail(2, "-recall-only needs -locomo DIR")
	}
	emb, m, err := recallEmbedder(embedder, mode)
	if err != nil {
		fail(2, "%v", err)
	}
	if emb != nil {
		fmt.Printf("semantic leg: %s, mode %s\n", emb.Model(), m)
	}
	f, err := bench.RunLoCoMo(context.Background(), locomoDir, dir, emb, bench.ModeSearch(m))
	if err != nil {
		fail(1, "locomo: %v", err)
	}
	fmt.Print(bench.FormatRecall(f))
}

// printFigures prints the in-process and whole-process figures per size.
func printFigures(figs []bench.Figures) {
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "figure\t"+header(figs))
	row := func(name string, get func(bench.Figures) string) {
		cells := []string{name}
		for _, f := range figs {
			cells = append(cells, get(f))
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	row("full reindex (target 10k < 2 s, 100k < 25 s)", func(f bench.Figures) string { return ms(f.FullReindex) })
	row("reconcile, 10 files edited (target 10k < 150 ms)", func(f bench.Figures) string { return ms(f.Reconcile10) })
	row("reconcile, nothing changed", func(f bench.Figures) string { return ms(f.ReconcileNone) })
	row("search in-process p50, prompts naming distinctive words (target 10k < 2 ms, 100k < 10 ms)", func(f bench.Figures) string { return ms(f.RareP50) })
	row("search in-process p99, prompts naming distinctive words", func(f bench.Figures) string { return ms(f.RareP99) })
	row("search in-process p50, prompt-like queries (target 10k < 2 ms, 100k < 10 ms)", func(f bench.Figures) string { return ms(f.PromptP50) })
	row("search in-process p99, prompt-like queries", func(f bench.Figures) string { return ms(f.PromptP99) })
	row("search in-process p50, Zipf word queries (worst case)", func(f bench.Figures) string { return ms(f.SearchP50) })
	row("search in-process p99, Zipf word queries", func(f bench.Figures) string { return ms(f.SearchP99) })
	row("searches answered by postings / FTS5 maxscore / floored / full query", func(f bench.Figures) string { return f.Paths })
	row("`anamnesis search` process p50 (target 10k < 30 ms)", func(f bench.Figures) string { return ms(f.ProcSearchP50) })
	row("`anamnesis search` process p95", func(f bench.Figures) string { return ms(f.ProcSearchP95) })
	row("`anamnesis write` process p50", func(f bench.Figures) string { return ms(f.ProcWriteP50) })
	row("`anamnesis hook session-start` p50 (target 10k < 25 ms)", func(f bench.Figures) string { return ms(f.HookStartP50) })
	row("`anamnesis hook prompt` p50 (target 10k < 30 ms)", func(f bench.Figures) string { return ms(f.HookPromptP50) })
	row("`anamnesis hook session-end` p50 (target 10k < 150 ms)", func(f bench.Figures) string { return ms(f.HookEndP50) })
	row("Store.Write throughput (fsync + index each)", func(f bench.Figures) string { return fmt.Sprintf("%.0f notes/s", f.WritesPerSecond) })
	w.Flush()
}

// printSync measures and prints the in-process sync figures per size in
// the comma-separated sizes (none: nothing).
func printSync(cfg bench.Config, sizes string) {
	var sf []bench.SyncFigures
	for _, s := range strings.Split(sizes, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			fail(2, "bad sync size %q", s)
		}
		f, err := bench.RunSync(context.Background(), cfg, n)
		if err != nil {
			fail(1, "sync %d: %v", n, err)
		}
		sf = append(sf, f)
	}
	if len(sf) == 0 {
		return
	}
	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	var hdr []string
	for _, f := range sf {
		hdr = append(hdr, fmt.Sprintf("%d notes", f.Notes))
	}
	fmt.Fprintln(w, "sync figure\t"+strings.Join(hdr, "\t"))
	srow := func(name string, get func(bench.SyncFigures) string) {
		cells := []string{name}
		for _, f := range sf {
			cells = append(cells, get(f))
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	srow("sync with nothing to do (target 10k < 300 ms)", func(f bench.SyncFigures) string { return ms(f.SyncNothing) })
	srow("sync pulling 10 edited notes, reindex included (target 10k < 500 ms)", func(f bench.SyncFigures) string { return ms(f.SyncPull10) })
	srow("index rows touched by that pull", func(f bench.SyncFigures) string { return strconv.Itoa(f.Reindexed) })
	srow("first sync of a full store (commit all, push)", func(f bench.SyncFigures) string { return ms(f.InitialPush) })
	srow("first sync of an empty machine (fetch, checkout, index)", func(f bench.SyncFigures) string { return ms(f.InitialPull) })
	srow("git status + commit decision, nothing changed", func(f bench.SyncFigures) string { return ms(f.CommitNothing) })
	srow("git commit of one note (what a write does)", func(f bench.SyncFigures) string { return ms(f.CommitOne) })
	w.Flush()
}

func header(figs []bench.Figures) string {
	var h []string
	for _, f := range figs {
		h = append(h, fmt.Sprintf("%d notes", f.Notes))
	}
	return strings.Join(h, "\t")
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func printLoop(f bench.LoopFigures) {
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "figure\tvalue\ttarget")
	fmt.Fprintf(w, "hit rate (answer reached the model: SessionStart + prompt)\t%.2f (%d/%d)\t>= 0.90\n", f.HitRate(), f.Hits, f.Probes)
	fmt.Fprintf(w, "prompt recall precision (recalled notes holding the answer)\t%.2f (%d/%d)\t>= 0.70\n", f.Precision(), f.RecalledRelevant, f.Recalled)
	fmt.Fprintf(w, "echo rate (delivered notes naming the subject without the answer)\t%.2f (%d/%d)\t\n", f.EchoRate(), f.Echoes, f.Mentioning)
	fmt.Fprintf(w, "characters injected per probe session\t%d\t\n", f.CharsPerSession)
	fmt.Fprintf(w, "project durable notes crowded out of SessionStart\t%d\t0\n", f.CrowdedOut)
	fmt.Fprintf(w, "notes given twice in one session\t%d\t0\n", f.Repeated)
	fmt.Fprintf(w, "session notes left by the scripted sessions (greetings and questions leave none)\t%d\t\n", f.SessionNotes)
	fr := f.Fresh
	fmt.Fprintf(w, "machine switch (1 note superseded, 1 edited elsewhere): current versions injected at session start\t%d/2 (stale: %d/2)\t2/2 (0)\n", fr.SwitchCurrentAtStart, fr.SwitchStaleAtStart)
	fmt.Fprintf(w, "machine switch: current versions by the first prompt, arrivals naming what they replace\t%d/2, %d\t2/2\n", fr.SwitchCurrentByPrompt, fr.SwitchRemarked)
	fmt.Fprintf(w, "machine switch: hook session-start wall time (sync to a hub on disk included)\t%s\t< 400 ms\n", ms(fr.SwitchStartWall))
	reached := "not within " + fr.OpenWait.String()
	if fr.OpenReached > 0 {
		reached = fmt.Sprintf("%.1f s", fr.OpenReached.Seconds())
	}
	fmt.Fprintf(w, "open session: a note pushed from the other machine reached a prompt after (prompts every %s, throttle %s)\t%s\t< 30 s at 20 s\n", fr.OpenEvery, fr.OpenThrottle, reached)
	fmt.Fprintf(w, "contradiction without supersedes: memory_write names the old note, SessionStart marks the pair\t%v, %v\ttrue, true\n", fr.ContradictionOffered, fr.ContradictionMarked)
	fmt.Fprintf(w, "60 durable + 10 global notes: project whole / by title / unnamed\t%d / %d / %d\t\n", fr.BigProjectWhole, fr.BigProjectListed, fr.BigProjectUnnamed)
	fmt.Fprintf(w, "60 durable + 10 global notes: global whole / by title / unnamed (%d characters)\t%d / %d / %d\tunnamed 0\n", fr.BigChars, fr.BigGlobalWhole, fr.BigGlobalListed, fr.BigGlobalUnnamed)
	fmt.Fprintf(w, "plugin route: session notes left by a session that wrote a durable note\t%d\t0\n", fr.PluginEchoes)
	if f.HookStartP50 > 0 {
		fmt.Fprintf(w, "hook session-start p50 at 10,000 notes\t%s\t< 25 ms\n", ms(f.HookStartP50))
		fmt.Fprintf(w, "hook prompt p50 at 10,000 notes\t%s\t< 30 ms\n", ms(f.HookPromptP50))
	}
	w.Flush()
}

// recallEmbedder reads -embedder KIND,URL,MODEL and the mode it implies.
func recallEmbedder(spec, mode string) (anamnesis.Embedder, string, error) {
	if spec == "" {
		if mode != "" && mode != anamnesis.ModeFTS {
			return nil, "", fmt.Errorf("-mode %s needs -embedder", mode)
		}
		return nil, anamnesis.ModeFTS, nil
	}
	e, err := anamnesis.ParseEmbedderSpec(spec)
	if err != nil || e == nil {
		return nil, "", fmt.Errorf("-embedder wants KIND,URL,MODEL: %v", err)
	}
	if e.APIKeyEnv == "" {
		e.APIKeyEnv = "ANAMNESIS_EMBED_API_KEY"
	}
	c, err := embed.New(embed.Config{Kind: e.Kind, URL: e.URL, Model: e.Model, APIKeyEnv: e.APIKeyEnv, Timeout: 60 * time.Second})
	if err != nil {
		return nil, "", err
	}
	if mode == "" {
		mode = anamnesis.ModeHybrid
	}
	return c, mode, nil
}

// printStartup prints the start-up table: one column per binary.
func printStartup(bins []string, dir string, runs int) error {
	figs, err := bench.RunStartup(context.Background(), bench.StartupConfig{Binaries: bins, Dir: dir, Runs: runs, Log: os.Stderr})
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	hdr := []string{"start-up figure (p50 of " + strconv.Itoa(runs) + " processes)"}
	for _, f := range figs {
		hdr = append(hdr, f.Binary)
	}
	fmt.Fprintln(w, strings.Join(hdr, "\t"))
	row := func(name string, get func(bench.StartupFigures) string) {
		cells := []string{name}
		for _, f := range figs {
			cells = append(cells, get(f))
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	row("binary size", func(f bench.StartupFigures) string { return fmt.Sprintf("%.1f MB", float64(f.Size)/1e6) })
	row("a Go process that does nothing", func(f bench.StartupFigures) string { return ms(f.Nothing) })
	row("`anamnesis --version`", func(f bench.StartupFigures) string { return ms(f.Version) })
	row("`anamnesis hook session-start` at 10k notes (target 6 ms)", func(f bench.StartupFigures) string { return ms(f.HookStart) })
	row("`anamnesis hook session-start` p90", func(f bench.StartupFigures) string { return ms(f.HookStartP90) })
	row("`anamnesis hook prompt` at 10k notes (target 6 ms)", func(f bench.StartupFigures) string { return ms(f.HookPrompt) })
	row("`anamnesis hook prompt` p90", func(f bench.StartupFigures) string { return ms(f.HookPromptP90) })
	row("CPU time: nothing / --version / session-start / prompt", func(f bench.StartupFigures) string {
		return fmt.Sprintf("%s / %s / %s / %s", ms(f.NothingCPU), ms(f.VersionCPU), ms(f.HookStartCPU), ms(f.HookPromptCPU))
	})
	return w.Flush()
}

// printScale prints what grows with the store (issue 29), each figure a
// process of the binary: median wall time and CPU, then the peak RSS of
// its runs. cfg.Binary may name several binaries, comma-separated (the
// release before and this one): their runs are interleaved, size by size
// and round by round, so a loaded machine weighs on each alike.
func printScale(cfg bench.Config, sizes string, rounds int) error {
	bins := strings.Split(cfg.Binary, ",")
	var figs []bench.ScaleFigures
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("bad scale size %q", s)
		}
		runs := make([][]bench.ScaleFigures, len(bins))
		for r := 0; r < max(rounds, 1); r++ {
			for i, b := range bins {
				c := cfg
				c.Binary = strings.TrimSpace(b)
				f, err := bench.RunScale(context.Background(), c, n)
				if err != nil {
					return fmt.Errorf("%s, %d notes: %w", c.Binary, n, err)
				}
				runs[i] = append(runs[i], f)
			}
		}
		for i := range bins {
			figs = append(figs, bench.MedianScale(runs[i]))
		}
	}
	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	var hdr []string
	for _, f := range figs {
		h := fmt.Sprintf("%d notes", f.Notes)
		if len(bins) > 1 {
			h += " " + filepath.Base(f.Binary)
		}
		hdr = append(hdr, h)
	}
	fmt.Fprintln(w, "scale figure (process: median wall, CPU, peak RSS)\t"+strings.Join(hdr, "\t"))
	row := func(name string, get func(bench.ScaleFigures) bench.Proc) {
		cells := []string{name}
		for _, f := range figs {
			p := get(f)
			rss := "-"
			if p.RSS > 0 {
				rss = fmt.Sprintf("%d MB", p.RSS>>20)
			}
			cells = append(cells, fmt.Sprintf("%s (cpu %s), %s", ms(p.Wall), ms(p.CPU), rss))
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	for _, r := range bench.ScaleRows {
		row(r.Name, r.Get)
	}
	return w.Flush()
}
