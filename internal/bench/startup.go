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
	bc := Config{Dir: cfg.Dir, Log: cfg.Log}
	out := make([]StartupFigures, len(cfg.Binaries))
	for i, b := range cfg.Binaries {
		abs, err := filepath.Abs(b)
		if err != nil {
			return nil, fmt.Errorf("find %s: %w", b, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("binary to measure: %w", err)
		}
		cfg.Binaries[i] = abs
		out[i] = StartupFigures{Binary: b, Size: fi.Size()}
	}
	nothing, err := buildNothing(ctx, cfg.Dir)
	if err != nil {
		return nil, err
	}
	src, _, err := ensureStore(bc, cfg.Notes)
	if err != nil {
		return nil, err
	}
	paths, err := listPaths(filepath.Join(src, note.PortableDir))
	if err != nil {
		return nil, err
	}
	prompts, err := promptQueries(paths, 50)
	if err != nil {
		return nil, err
	}
	// Each binary gets a home of its own, indexed by itself: binaries of
	// two index schema versions sharing one would rebuild it in turn.
	envs := make([][]string, len(cfg.Binaries))
	var proj string
	for b, bin := range cfg.Binaries {
		home := filepath.Join(cfg.Dir, fmt.Sprintf("startup-home-%d", b))
		envs[b] = append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=bench")
		if proj, err = hookFixture(ctx, bc, bin, src, home, envs[b]); err != nil {
			return nil, err
		}
	}
	env := envs[0]

	// times runs every binary's command cfg.Runs times, interleaved, after
	// two untimed rounds that warm the page cache.
	times := func(stdin func(i int) string, args ...string) (wall, cpu [][]time.Duration, err error) {
		wall = make([][]time.Duration, len(cfg.Binaries))
		cpu = make([][]time.Duration, len(cfg.Binaries))
		for i := -2; i < cfg.Runs; i++ {
			for b, bin := range cfg.Binaries {
				in := ""
				if stdin != nil {
					in = stdin(i + 2)
				}
				d, c, err := timeProcCPU(ctx, bin, envs[b], in, args...)
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
	var none, noneCPU []time.Duration
	for i := -2; i < cfg.Runs; i++ {
		d, c, err := timeProcCPU(ctx, nothing, env, "")
		if err != nil {
			return nil, err
		}
		if i >= 0 {
			none, noneCPU = append(none, d), append(noneCPU, c)
		}
	}
	ver, verCPU, err := times(nil, "--version")
	if err != nil {
		return nil, err
	}
	start, startCPU, err := times(func(i int) string {
		return fmt.Sprintf(`{"session_id":"startup-%d","cwd":%q,"hook_event_name":"SessionStart","source":"clear"}`, i, proj)
	}, "hook", "session-start")
	if err != nil {
		return nil, err
	}
	prompt, promptCPU, err := times(func(i int) string {
		b, _ := json.Marshal(map[string]string{"session_id": fmt.Sprintf("startup-prompt-%d", i), "cwd": proj, "prompt": prompts[i%len(prompts)]})
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
		bc.logf("  %s: nothing %v, --version %v, session-start %v, prompt %v (p50 of %d)", out[b].Binary, out[b].Nothing,
			out[b].Version, out[b].HookStart, out[b].HookPrompt, cfg.Runs)
	}
	return out, nil
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
