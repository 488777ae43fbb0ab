package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/internal/synth"
	"github.com/anamnesis-memory/anamnesis/note"
)

// Proc is one figure of a process: the median wall time of its runs and
// the highest peak RSS any of them reached.
type Proc struct {
	Wall  time.Duration
	CPU   time.Duration // median user + system time
	RSS   int64         // bytes
	Runs  int
	Notes int // notes a pull brought, where that applies
}

// ScaleFigures are what grows with the store, each as a process of the
// binary under test (cfg.Binary) on two machines and a bare hub: the
// costs issue 29 asks to keep flat.
type ScaleFigures struct {
	Notes        int
	Binary       string
	FirstPush    Proc // first sync of a full store: commit everything, push
	FirstPull    Proc // first sync of an empty machine: fetch, check out, index
	Write        Proc // `anamnesis write` of one portable note (index + commit)
	HookEnd      Proc // `anamnesis hook session-end`: capture and commit one note
	SyncNothing  Proc // `anamnesis sync` with nothing to do on either side
	Pull100      Proc // `anamnesis sync` bringing 100 new notes
	Pull1000     Proc // `anamnesis sync` bringing 1,000 new notes
	FullReindex  Proc // `anamnesis reindex` with no index.db (a fresh one built)
	ReindexEmpty Proc // `anamnesis reindex` with nothing changed
	VecSearch    Proc // `anamnesis search --mode vec`, a process's first semantic search (scale_vectors.go)
}

// ScaleRows names the scale figures in the order they are printed, each
// with its target where issue 29 set one.
var ScaleRows = []struct {
	Name string
	Get  func(ScaleFigures) Proc
}{
	{"write of one note (target 100k < 150 ms, 64 MB)", func(f ScaleFigures) Proc { return f.Write }},
	{"hook session-end (target 100k < 150 ms, 64 MB)", func(f ScaleFigures) Proc { return f.HookEnd }},
	{"sync with nothing to do (target 100k < 300 ms)", func(f ScaleFigures) Proc { return f.SyncNothing }},
	{"reindex with nothing to do (target 100k < 300 ms)", func(f ScaleFigures) Proc { return f.ReindexEmpty }},
	{"sync pulling 100 new notes (target 100k < 1 s CPU)", func(f ScaleFigures) Proc { return f.Pull100 }},
	{"sync pulling 1,000 new notes (target 10k < 1.5 s CPU)", func(f ScaleFigures) Proc { return f.Pull1000 }},
	{"first sync of a full store (commit all, push)", func(f ScaleFigures) Proc { return f.FirstPush }},
	{"first sync of an empty machine (target 100k < 60 s, 300 MB)", func(f ScaleFigures) Proc { return f.FirstPull }},
	{"full reindex (target 100k < 25 s, 300 MB)", func(f ScaleFigures) Proc { return f.FullReindex }},
	{"first semantic search of a process, 768 dims (target 100k < 250 ms)", func(f ScaleFigures) Proc { return f.VecSearch }},
}

// MedianScale folds rounds of one binary at one size into one set of
// figures: per figure the median of the rounds' wall and CPU medians and
// the highest peak RSS.
func MedianScale(rounds []ScaleFigures) ScaleFigures {
	if len(rounds) == 0 {
		return ScaleFigures{}
	}
	out := rounds[0]
	fields := []func(*ScaleFigures) *Proc{
		func(f *ScaleFigures) *Proc { return &f.FirstPush }, func(f *ScaleFigures) *Proc { return &f.FirstPull },
		func(f *ScaleFigures) *Proc { return &f.Write }, func(f *ScaleFigures) *Proc { return &f.HookEnd },
		func(f *ScaleFigures) *Proc { return &f.SyncNothing }, func(f *ScaleFigures) *Proc { return &f.Pull100 },
		func(f *ScaleFigures) *Proc { return &f.Pull1000 }, func(f *ScaleFigures) *Proc { return &f.FullReindex },
		func(f *ScaleFigures) *Proc { return &f.ReindexEmpty }, func(f *ScaleFigures) *Proc { return &f.VecSearch },
	}
	for _, field := range fields {
		var walls, cpus []time.Duration
		dst := field(&out)
		for i := range rounds {
			p := field(&rounds[i])
			walls, cpus = append(walls, p.Wall), append(cpus, p.CPU)
			dst.RSS = max(dst.RSS, p.RSS)
		}
		dst.Wall, dst.CPU, dst.Runs = pct(walls, 50), pct(cpus, 50), dst.Runs*len(rounds)
	}
	return out
}

// RunScale measures ScaleFigures on copies of the generated store of n
// notes under cfg.Dir/scale-run-n-* (removed after; the generated store
// is reused).
func RunScale(ctx context.Context, cfg Config, n int) (ScaleFigures, error) {
	f := ScaleFigures{Notes: n, Binary: cfg.Binary}
	if cfg.Binary == "" {
		return f, fmt.Errorf("the scale figures need -bin")
	}
	src, _, err := ensureStore(cfg, n)
	if err != nil {
		return f, err
	}
	// A directory of its own per run: two runs beside each other (two
	// binaries, two people) never share a hub or a home.
	root, err := os.MkdirTemp(cfg.Dir, fmt.Sprintf("scale-run-%d-", n))
	if err != nil {
		return f, fmt.Errorf("scale run directory: %w", err)
	}
	defer os.RemoveAll(root)
	r, err := newScaleRun(ctx, cfg, root, src)
	if err != nil {
		return f, err
	}
	for _, step := range []func(*ScaleFigures) error{r.firstSyncs, r.everyday, r.pulls, r.fullReindex, r.vecSearch} {
		if err := step(&f); err != nil {
			return f, err
		}
	}
	return f, nil
}

// scaleRun is one run of the scale figures: a bare hub, machine A with
// the generated notes and machine B, empty.
type scaleRun struct {
	ctx          context.Context
	cfg          Config
	homeA, homeB string
	envA, envB   []string
}

func newScaleRun(ctx context.Context, cfg Config, root, src string) (*scaleRun, error) {
	hub := filepath.Join(root, "hub.git")
	if out, err := exec.Command("git", "init", "--bare", "-b", "main", hub).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git init --bare: %v: %s", err, out)
	}
	r := &scaleRun{ctx: ctx, cfg: cfg, homeA: filepath.Join(root, "a"), homeB: filepath.Join(root, "b")}
	if err := copyTree(filepath.Join(src, note.PortableDir), filepath.Join(r.homeA, note.PortableDir)); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.homeB, 0o755); err != nil {
		return nil, err
	}
	env := func(home, machine string) []string {
		return append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID="+machine, "ANAMNESIS_GIT_REMOTE="+hub)
	}
	r.envA, r.envB = env(r.homeA, "bench-a"), env(r.homeB, "bench-b")
	return r, nil
}

// run times runs processes of the binary with env e, each after prep,
// which returns its stdin.
func (r *scaleRun) run(runs int, e []string, prep func(i int) (string, error), args ...string) (Proc, error) {
	return timeRuns(r.ctx, r.cfg.Binary, e, runs, prep, args...)
}

// timeRuns runs bin runs times with env, each after prep, which returns
// its stdin: the median wall and CPU time and the highest peak RSS.
func timeRuns(ctx context.Context, bin string, env []string, runs int, prep func(i int) (string, error), args ...string) (Proc, error) {
	var walls, cpus []time.Duration
	p := Proc{Runs: runs}
	for i := range runs {
		stdin, err := prep(i)
		if err != nil {
			return p, err
		}
		wall, cpu, rss, err := timeProcRSS(ctx, bin, env, stdin, args...)
		if err != nil {
			return p, err
		}
		walls, cpus = append(walls, wall), append(cpus, cpu)
		p.RSS = max(p.RSS, rss)
	}
	p.Wall, p.CPU = pct(walls, 50), pct(cpus, 50)
	return p, nil
}

func noStdin(int) (string, error) { return "", nil }

// waitBackground returns once no background sync holds home's
// repository lock: it gives one just started by a hook time to take the
// lock, then waits for the lock itself.
func (r *scaleRun) waitBackground(home string) error {
	select {
	case <-time.After(300 * time.Millisecond):
	case <-r.ctx.Done():
		return r.ctx.Err()
	}
	l, err := gitsync.AcquireAs(r.ctx, filepath.Join(home, note.PortableDir, ".git"), 2*time.Minute, gitsync.PurposeSync)
	if err != nil {
		return fmt.Errorf("wait for the background sync of %s: %w", home, err)
	}
	l.Release()
	return nil
}

// firstSyncs: A commits and pushes everything, then B, empty, syncs.
func (r *scaleRun) firstSyncs(f *ScaleFigures) error {
	var err error
	if f.FirstPush, err = r.run(1, r.envA, noStdin, "sync"); err != nil {
		return err
	}
	r.cfg.logf("  scale %d: first sync of a full store %v, %d MB", f.Notes, f.FirstPush.Wall, f.FirstPush.RSS>>20)
	if f.FirstPull, err = r.run(1, r.envB, noStdin, "sync"); err != nil {
		return err
	}
	r.cfg.logf("  scale %d: first sync of an empty machine %v, %d MB", f.Notes, f.FirstPull.Wall, f.FirstPull.RSS>>20)
	return nil
}

// everyday: on A, reindex and sync with nothing to do, a write, a
// SessionEnd capture.
func (r *scaleRun) everyday(f *ScaleFigures) error {
	var err error
	if f.ReindexEmpty, err = r.run(5, r.envA, noStdin, "reindex"); err != nil {
		return err
	}
	if f.SyncNothing, err = r.run(5, r.envA, noStdin, "sync"); err != nil {
		return err
	}
	g := synth.NewGen(synth.NewVocab(20000, 1), 7)
	if f.Write, err = r.run(7, r.envA, func(int) (string, error) { return g.Body(), nil },
		"write", "--type", "semantic", "--title", "scale bench note", "--scope", "portable"); err != nil {
		return err
	}
	proj, transcript, err := hookSession(r.cfg.Dir)
	if err != nil {
		return err
	}
	if f.HookEnd, err = r.run(7, r.envA, func(i int) (string, error) {
		// Each capture starts a sync in the background, and the next run
		// waited for its lock: a user's next session ends minutes later.
		if err := r.waitBackground(r.homeA); err != nil {
			return "", err
		}
		return fmt.Sprintf(`{"session_id":"scale-end-%d-%d","transcript_path":%q,"cwd":%q}`, time.Now().UnixNano(), i, transcript, proj), nil
	}, "hook", "session-end"); err != nil {
		return err
	}
	r.cfg.logf("  scale %d: write %v %d MB, session-end %v %d MB, sync nothing %v %d MB", f.Notes,
		f.Write.Wall, f.Write.RSS>>20, f.HookEnd.Wall, f.HookEnd.RSS>>20, f.SyncNothing.Wall, f.SyncNothing.RSS>>20)
	return nil
}

// pulls: B takes what A wrote (untimed); then A writes k new notes and
// pushes them (untimed) and B's sync, the pull, is timed.
func (r *scaleRun) pulls(f *ScaleFigures) error {
	if _, err := r.run(1, r.envB, noStdin, "sync"); err != nil {
		return err
	}
	seed := int64(1000)
	pull := func(k, runs int) (Proc, error) {
		p, err := r.run(runs, r.envB, func(int) (string, error) {
			seed++
			tree := note.Tree{Root: filepath.Join(r.homeA, note.PortableDir), Scope: note.ScopePortable}
			if _, err := synth.Fill(tree, synth.NewGen(synth.NewVocab(20000, 1), seed), k, time.Date(2026, 1, 1, 0, 0, int(seed), 0, time.UTC)); err != nil {
				return "", err
			}
			_, _, _, err := timeProcRSS(r.ctx, r.cfg.Binary, r.envA, "", "sync")
			return "", err
		}, "sync")
		p.Notes = k
		return p, err
	}
	var err error
	if f.Pull100, err = pull(100, 3); err != nil {
		return err
	}
	if f.Pull1000, err = pull(1000, 1); err != nil {
		return err
	}
	r.cfg.logf("  scale %d: pull 100 %v (cpu %v) %d MB, pull 1000 %v (cpu %v) %d MB", f.Notes,
		f.Pull100.Wall, f.Pull100.CPU, f.Pull100.RSS>>20, f.Pull1000.Wall, f.Pull1000.CPU, f.Pull1000.RSS>>20)
	return nil
}

// fullReindex: B's index removed, then `anamnesis reindex` builds it anew.
func (r *scaleRun) fullReindex(f *ScaleFigures) error {
	for _, s := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(r.homeB, "index.db"+s))
	}
	var err error
	if f.FullReindex, err = r.run(1, r.envB, noStdin, "reindex"); err != nil {
		return err
	}
	r.cfg.logf("  scale %d: full reindex %v %d MB", f.Notes, f.FullReindex.Wall, f.FullReindex.RSS>>20)
	return nil
}

// vecSearch: on A, every note given a vector, then a new process's first
// semantic search.
func (r *scaleRun) vecSearch(f *ScaleFigures) error {
	var err error
	if f.VecSearch, err = vectorSearch(r.ctx, r.cfg, r.homeA, r.envA, 5); err != nil {
		return err
	}
	r.cfg.logf("  scale %d: first semantic search %v (cpu %v) %d MB", f.Notes, f.VecSearch.Wall, f.VecSearch.CPU, f.VecSearch.RSS>>20)
	return nil
}

// hookSession writes the project directory and transcript a SessionEnd
// runs with (as measureHooks does) and returns their paths.
func hookSession(dir string) (proj, transcript string, err error) {
	proj = filepath.Join(dir, "scale-project")
	if err := os.MkdirAll(filepath.Join(proj, ".anamnesis"), 0o755); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(proj, ".anamnesis", "project"), []byte("github.com/example/project03\n"), 0o644); err != nil {
		return "", "", err
	}
	transcript = filepath.Join(dir, "scale-transcript.jsonl")
	return proj, transcript, writeHookTranscript(transcript, proj)
}

// timeProcRSS is timeProcCPU that also returns the process's peak RSS in
// bytes (0 where the platform does not say).
func timeProcRSS(ctx context.Context, bin string, env []string, stdin string, args ...string) (wall, cpu time.Duration, rss int64, err error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	wall = time.Since(t0)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%s %v: %w\n%s", bin, args, err, out)
	}
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), peakRSS(cmd.ProcessState), nil
}
