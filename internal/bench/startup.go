package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

// StartupConfig says what the start-up figures measure: every hook is a
// fresh process, so what a process costs before it does any work is
// paid on every prompt.
type StartupConfig struct {
	// Binaries are the anamnesis binaries to compare; their runs are
	// interleaved (A, B, A, B, ...) so a machine whose load changes
	// during the measurement weighs on each alike.
	Binaries []string
	Dir      string // where the 10,000-note store is generated (reused)
	Notes    int    // store size for the hook figures (0: 10,000)
	Runs     int    // timed runs per figure and binary (0: 41)
	Log      io.Writer
}

// StartupFigures are one binary's p50 process times.
type StartupFigures struct {
	Binary        string
	Size          int64         // bytes on disk
	Nothing       time.Duration // a Go program whose main returns at once (same for every binary)
	Version       time.Duration // `anamnesis --version`
	HookStart     time.Duration // `anamnesis hook session-start` at Notes notes
	HookPrompt    time.Duration // `anamnesis hook prompt`
	HookStartP90  time.Duration
	HookPromptP90 time.Duration
	// CPU time (user + system) p50 of the same processes: steadier than
	// wall time when other work shares the cores.
	NothingCPU, VersionCPU, HookStartCPU, HookPromptCPU time.Duration
}

// RunStartup measures each binary's start-up figures.
func RunStartup(ctx context.Context, cfg StartupConfig) ([]StartupFigures, error) {
	if len(cfg.Binaries) == 0 {
		return nil, fmt.Errorf("no binary to measure")
	}
	if cfg.Notes == 0 {
		cfg.Notes = 10000
	}
	if cfg.Runs == 0 {
		cfg.Runs = 41
	}
	out, err := startupBinaries(cfg.Binaries)
	if err != nil {
		return nil, err
	}
	nothing, err := buildNothing(ctx, cfg.Dir)
	if err != nil {
		return nil, err
	}
	t, prompts, err := newStartupTimer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	none, noneCPU, err := t.nothing(nothing)
	if err != nil {
		return nil, err
	}
	ver, verCPU, err := t.times(nil, "--version")
	if err != nil {
		return nil, err
	}
	start, startCPU, err := t.times(func(i int) string {
		return fmt.Sprintf(`{"session_id":"startup-%d","cwd":%q,"hook_event_name":"SessionStart","source":"clear"}`, i, t.proj)
	}, "hook", "session-start")
	if err != nil {
		return nil, err
	}
	prompt, promptCPU, err := t.times(func(i int) string {
		b, _ := json.Marshal(map[string]string{"session_id": fmt.Sprintf("startup-prompt-%d", i), "cwd": t.proj, "prompt": prompts[i%len(prompts)]})
		return string(b)
	}, "hook", "prompt")
	if err != nil {
		return nil, err
	}
	for b := range out {
		out[b].Nothing = pct(none, 50)
		out[b].Version = pct(ver[b], 50)
		out[b].HookStart, out[b].HookStartP90 = pct(start[b], 50), pct(start[b], 90)
		out[b].HookPrompt, out[b].HookPromptP90 = pct(prompt[b], 50), pct(prompt[b], 90)
		out[b].NothingCPU, out[b].VersionCPU = pct(noneCPU, 50), pct(verCPU[b], 50)
		out[b].HookStartCPU, out[b].HookPromptCPU = pct(startCPU[b], 50), pct(promptCPU[b], 50)
		t.bc.logf("  %s: nothing %v, --version %v, session-start %v, prompt %v (p50 of %d)", out[b].Binary, out[b].Nothing,
			out[b].Version, out[b].HookStart, out[b].HookPrompt, cfg.Runs)
	}
	return out, nil
}

// startupBinaries makes the binaries' paths absolute (in place) and
// returns their figures with name and size filled in.
func startupBinaries(bins []string) ([]StartupFigures, error) {
	out := make([]StartupFigures, len(bins))
	for i, b := range bins {
		abs, err := filepath.Abs(b)
		if err != nil {
			return nil, fmt.Errorf("find %s: %w", b, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("binary to measure: %w", err)
		}
		bins[i] = abs
		out[i] = StartupFigures{Binary: b, Size: fi.Size()}
	}
	return out, nil
}

// startupTimer runs the binaries' processes interleaved, each binary in a
// home of its own.
type startupTimer struct {
	ctx  context.Context
	cfg  StartupConfig
	bc   Config
	envs [][]string
	proj string // the project directory hooks run in
}

// newStartupTimer gives each binary a home of its own, indexed by
// itself (binaries of two index schema versions sharing one would
// rebuild it in turn), and returns prompts drawn from the store's notes.
func newStartupTimer(ctx context.Context, cfg StartupConfig) (*startupTimer, []string, error) {
	t := &startupTimer{ctx: ctx, cfg: cfg, bc: Config{Dir: cfg.Dir, Log: cfg.Log}}
	src, _, err := ensureStore(t.bc, cfg.Notes)
	if err != nil {
		return nil, nil, err
	}
	paths, err := listPaths(filepath.Join(src, note.PortableDir))
	if err != nil {
		return nil, nil, err
	}
	prompts, err := promptQueries(paths, 50)
	if err != nil {
		return nil, nil, err
	}
	t.envs = make([][]string, len(cfg.Binaries))
	for b, bin := range cfg.Binaries {
		home := filepath.Join(cfg.Dir, fmt.Sprintf("startup-home-%d", b))
		t.envs[b] = append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=bench")
		if t.proj, err = hookFixture(ctx, t.bc, bin, src, home, t.envs[b]); err != nil {
			return nil, nil, err
		}
	}
	return t, prompts, nil
}

// nothing times the empty program, after two untimed runs.
func (t *startupTimer) nothing(bin string) (wall, cpu []time.Duration, err error) {
	for i := -2; i < t.cfg.Runs; i++ {
		d, c, err := timeProcCPU(t.ctx, bin, t.envs[0], "")
		if err != nil {
			return nil, nil, err
		}
		if i >= 0 {
			wall, cpu = append(wall, d), append(cpu, c)
		}
	}
	return wall, cpu, nil
}

// times runs every binary's command cfg.Runs times, interleaved, after
// two untimed rounds that warm the page cache.
func (t *startupTimer) times(stdin func(i int) string, args ...string) (wall, cpu [][]time.Duration, err error) {
	wall = make([][]time.Duration, len(t.cfg.Binaries))
	cpu = make([][]time.Duration, len(t.cfg.Binaries))
	for i := -2; i < t.cfg.Runs; i++ {
		for b, bin := range t.cfg.Binaries {
			in := ""
			if stdin != nil {
				in = stdin(i + 2)
			}
			d, c, err := timeProcCPU(t.ctx, bin, t.envs[b], in, args...)
			if err != nil {
				return nil, nil, err
			}
			if i >= 0 {
				wall[b] = append(wall[b], d)
				cpu[b] = append(cpu[b], c)
			}
		}
	}
	return wall, cpu, nil
}

// buildNothing compiles a Go program that returns from main at once: the
// floor under any Go process on this machine.
func buildNothing(ctx context.Context, dir string) (string, error) {
	src, err := filepath.Abs(filepath.Join(dir, "nothing"))
	if err != nil {
		return "", fmt.Errorf("find %s: %w", dir, err)
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", src, err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		return "", fmt.Errorf("write the empty program: %w", err)
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module nothing\n"), 0o644); err != nil {
		return "", fmt.Errorf("write the empty program: %w", err)
	}
	bin := filepath.Join(src, "nothing")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the empty program: %w\n%s", err, out)
	}
	return bin, nil
}
