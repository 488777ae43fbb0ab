package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/embed"
	"github.com/urfave/cli/v2"
)

// openMode says what a store is opened for.
type openMode int

const (
	// forCommand: a command; a home without a store is an error (only
	// init, and a first write into an empty directory, set one up).
	forCommand openMode = iota
	// forFirstWrite also sets up a store in a home that is an existing,
	// empty directory (`mkdir ~/notes` then a write), never in one it
	// would have to create, so a mistyped --home still fails.
	forFirstWrite
	// forHook: on Claude Code's or git's budget. A short lock wait, and an
	// index that needs a rebuild is rebuilt in the background
	// (ErrNeedsRebuild), not inside the hook.
	forHook
	// forServer: a command with a long life of many requests (mcp,
	// ui, serve); the index keeps its prepared statements.
	forServer
)

// remoteEnv overrides config.json's remote.
const remoteEnv = "ANAMNESIS_GIT_REMOTE"

// storeOptions turns the global flags and the environment into the
// Store's options: the one place that reads them. Notices (an index
// rebuilt from files) go to stderr so they never pollute --json output.
func storeOptions(c *cli.Context, mode openMode) (home string, o anamnesis.Options, err error) {
	if home, err = anamnesis.ResolveHome(c.String("home")); err != nil {
		return "", o, err
	}
	if o.MachineID, err = machineIDOption(c); err != nil {
		return "", o, err
	}
	if o.DecayDays, err = decayOption(c); err != nil {
		return "", o, err
	}
	o.Tailnet = tailscaled{}
	o.NewEmbedder = newEmbedder
	o.Remote = envOf(c).getenv(remoteEnv)
	o.TailscaleSocket = tailscaleSocketOption(c)
	switch mode {
	case forHook:
		o.BusyTimeout = time.Second
		o.DeferRebuild = true
		o.Notice = func(s string) { fmt.Fprintf(c.App.ErrWriter, "anamnesis: %s\n", s) }
		// Claude Code shows a hook's stderr: a misconfigured embedder only
		// leaves recall to BM25 there (search and doctor name the fault).
		o.NewEmbedder = func(c anamnesis.EmbedderConfig) (anamnesis.Embedder, error) {
			if e, err := newEmbedder(c); err == nil {
				return e, nil
			}
			return nil, nil
		}
	default:
		o.Server = mode == forServer
		progress := newProgressLine(c.App.ErrWriter)
		o.Progress = progress.update
		o.Notice = func(s string) {
			progress.clear()
			fmt.Fprintf(c.App.ErrWriter, "anamnesis: %s\n", s)
		}
		o.Create = mode == forFirstWrite && isEmptyDir(home)
	}
	return home, o, nil
}

// openStore opens the store named by the global flags for mode. A hook
// that finds the index needing a rebuild starts one in the background
// and gets an error saying so: it goes without memory once.
func openStore(c *cli.Context, mode openMode) (*anamnesis.Store, error) {
	home, o, err := storeOptions(c, mode)
	if err != nil {
		return nil, err
	}
	s, err := anamnesis.Open(c.Context, home, o)
	if mode == forHook && errors.Is(err, anamnesis.ErrNeedsRebuild) {
		return nil, startBackgroundReindex(envOf(c), home, err)
	}
	return s, err
}

// decayOption is --decay-days: 0 when not given (config.json decides),
// -1 for an explicit 0 (off, whatever config.json says).
func decayOption(c *cli.Context) (float64, error) {
	if !c.IsSet(decayFlagName) {
		return 0, nil
	}
	// NaN would make every score NaN; +Inf is decay that never decays.
	days := c.Float64(decayFlagName)
	if !(days >= 0) || math.IsInf(days, 1) {
		return 0, usagef("--%s must be a number of days >= 0, got %v", decayFlagName, days)
	}
	if days == 0 {
		return -1, nil
	}
	return days, nil
}

// tailscaleSocketOption is --tailscale-socket, given before the command
// or after serve and peers (which had it first), else
// ANAMNESIS_TAILSCALE_SOCKET; "" leaves it to config.json. urfave/cli
// reads a flag a command defines itself from that command only, so the
// contexts are searched for the one where it was given.
func tailscaleSocketOption(c *cli.Context) string {
	for _, x := range c.Lineage() {
		for _, n := range x.LocalFlagNames() {
			if n == tailscaleSocketFlag {
				return strings.TrimSpace(x.String(tailscaleSocketFlag))
			}
		}
	}
	return strings.TrimSpace(envOf(c).getenv(tailscaleSocketEnv))
}

// isEmptyDir reports whether dir is an existing directory with nothing in it.
func isEmptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return len(names) == 0 && errors.Is(err, io.EOF)
}

// machineIDOption returns --machine-id (or ANAMNESIS_MACHINE_ID), refusing
// an id git would reject in a commit identity with a usage error that
// names where it came from, before anything is written with it.
func machineIDOption(c *cli.Context) (string, error) {
	raw := c.String("machine-id")
	v := strings.TrimSpace(raw)
	if v == "" {
		return "", nil
	}
	if err := anamnesis.ValidateMachineID(v); err != nil {
		src := "--machine-id"
		if envOf(c).getenv("ANAMNESIS_MACHINE_ID") == raw {
			src = "ANAMNESIS_MACHINE_ID"
		}
		return "", usagef("machine id %q from %s %v", v, src, err)
	}
	return v, nil
}

// withStore runs fn with a store open for mode and closes it afterwards.
func withStore(c *cli.Context, mode openMode, fn func(context.Context, *anamnesis.Store) error) error {
	s, err := openStore(c, mode)
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(c.Context, s)
}

// newEmbedder builds the semantic leg's client from config.json's
// "embedder" (package embed).
func newEmbedder(c anamnesis.EmbedderConfig) (anamnesis.Embedder, error) {
	return embed.New(embed.Config{Kind: c.Kind, URL: c.URL, Model: c.Model, APIKeyEnv: c.APIKeyEnv})
}

// sessionStartSyncEnv overrides config.json's session_start_sync_ms.
const sessionStartSyncEnv = "ANAMNESIS_SESSION_START_SYNC_MS"

// sessionStartSync is how long SessionStart waits for its sync:
// ANAMNESIS_SESSION_START_SYNC_MS, else config.json's
// session_start_sync_ms, else anamnesis.DefaultSessionStartSync. A value
// that is not a number of milliseconds from 0 to the maximum is named on
// stderr and the default taken: a hook never fails over it.
func sessionStartSync(c *cli.Context, cfg anamnesis.Config) time.Duration {
	if v := strings.TrimSpace(envOf(c).getenv(sessionStartSyncEnv)); v != "" {
		ms, err := strconv.Atoi(v)
		if err == nil && ms >= 0 && ms <= anamnesis.MaxSessionStartSyncMS {
			return time.Duration(ms) * time.Millisecond
		}
		fmt.Fprintf(c.App.ErrWriter, "anamnesis: %s=%q is not a number of milliseconds from 0 to %d; waiting %s\n",
			sessionStartSyncEnv, v, anamnesis.MaxSessionStartSyncMS, anamnesis.DefaultSessionStartSync)
		return anamnesis.DefaultSessionStartSync
	}
	if cfg.SessionStartSyncMS != nil {
		return time.Duration(*cfg.SessionStartSyncMS) * time.Millisecond
	}
	return anamnesis.DefaultSessionStartSync
}

// promptSyncEnv overrides config.json's prompt_sync_seconds.
const promptSyncEnv = "ANAMNESIS_PROMPT_SYNC_SECONDS"

// promptSyncInterval is the least time between two syncs the prompt hook
// starts (per home): ANAMNESIS_PROMPT_SYNC_SECONDS, else config.json's
// prompt_sync_seconds, else anamnesis.DefaultPromptSync; 0 turns them
// off. A bad value is named on stderr and the default taken.
func promptSyncInterval(c *cli.Context, cfg anamnesis.Config) time.Duration {
	if v := strings.TrimSpace(envOf(c).getenv(promptSyncEnv)); v != "" {
		sec, err := strconv.ParseFloat(v, 64)
		if err == nil && sec >= 0 && sec <= 3600 {
			return time.Duration(sec * float64(time.Second))
		}
		fmt.Fprintf(c.App.ErrWriter, "anamnesis: %s=%q is not a number of seconds from 0 to 3600; using %s\n",
			promptSyncEnv, v, anamnesis.DefaultPromptSync)
		return anamnesis.DefaultPromptSync
	}
	if cfg.PromptSyncSeconds != nil {
		return time.Duration(*cfg.PromptSyncSeconds) * time.Second
	}
	return anamnesis.DefaultPromptSync
}
