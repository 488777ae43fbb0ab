package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/urfave/cli/v2"
)

// openStore opens the store named by the global flags; a home without a
// store is an error (only init, and a first write into an empty
// directory, set one up). Notices (an index rebuilt from files) go to
// stderr so they never pollute --json output.
func openStore(c *cli.Context) (*anamnesis.Store, error) { return openStoreFor(c, false) }

// openStoreFor is openStore; firstWrite also sets up a store in a home
// that is an existing, empty directory (`mkdir ~/notes` then a write),
// never in one it would have to create, so a mistyped --home still fails.
func openStoreFor(c *cli.Context, firstWrite bool) (*anamnesis.Store, error) {
	home, err := anamnesis.ResolveHome(c.String("home"))
	if err != nil {
		return nil, err
	}
	machineID, err := machineIDOption(c)
	if err != nil {
		return nil, err
	}
	var decayDays float64
	if c.IsSet(decayFlag.Name) {
		// NaN would make every score NaN; +Inf is decay that never decays.
		if decayDays = c.Float64(decayFlag.Name); !(decayDays >= 0) || math.IsInf(decayDays, 1) {
			return nil, usagef("--%s must be a number of days >= 0, got %v", decayFlag.Name, decayDays)
		}
		if decayDays == 0 {
			decayDays = -1 // explicitly off, whatever config.json says
		}
	}
	progress := newProgressLine(c.App.ErrWriter)
	return anamnesis.Open(c.Context, home, anamnesis.Options{
		Tailnet:         tailscaled{},
		MachineID:       machineID,
		Remote:          os.Getenv("ANAMNESIS_GIT_REMOTE"),
		TailscaleSocket: tailscaleSocketOption(c),
		Notice: func(s string) {
			progress.clear()
			fmt.Fprintf(c.App.ErrWriter, "anamnesis: %s\n", s)
		},
		Progress:  progress.update,
		DecayDays: decayDays,
		Create:    firstWrite && isEmptyDir(home),
	})
}

const (
	tailscaleSocketFlag = "tailscale-socket"
	tailscaleSocketEnv  = "ANAMNESIS_TAILSCALE_SOCKET"
)

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
	return strings.TrimSpace(os.Getenv(tailscaleSocketEnv))
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
		if os.Getenv("ANAMNESIS_MACHINE_ID") == raw {
			src = "ANAMNESIS_MACHINE_ID"
		}
		return "", usagef("machine id %q from %s %v", v, src, err)
	}
	return v, nil
}

// atLeastOne refuses an integer flag that means nothing below 1 (a count
// of notes or queries) when it is given at all.
func atLeastOne(c *cli.Context, name, what string) error {
	if c.IsSet(name) && c.Int(name) < 1 {
		return usagef("-%s%s must be at least 1, got %d%s", dashes(name), name, c.Int(name), what)
	}
	return nil
}

// positiveDuration refuses a duration flag of zero or less (the sync
// layer would quietly read it as its default).
func positiveDuration(c *cli.Context, name string) error {
	if d := c.Duration(name); d <= 0 {
		return usagef("--%s must be more than 0, got %s", name, d)
	}
	return nil
}

// portFlag refuses a port no TCP address can have.
func portFlag(c *cli.Context) error {
	if p := c.Int("port"); p < 1 || p > 65535 {
		return usagef("--port must be between 1 and 65535, got %d", p)
	}
	return nil
}

func dashes(name string) string {
	if len(name) == 1 {
		return ""
	}
	return "-"
}

// decayFlag sets recency decay for one run of search or eval.
var decayFlag = &cli.Float64Flag{Name: "decay-days", Usage: "re-rank the best matches by score x exp(-age/`DAYS`); 0 turns decay off (default: recall_decay_days in config.json, else off)"}

// withStore runs fn with an open store and closes it afterwards.
func withStore(c *cli.Context, fn func(context.Context, *anamnesis.Store) error) error {
	return withStoreFor(c, false, fn)
}

// withStoreFor is withStore; firstWrite as in openStoreFor.
func withStoreFor(c *cli.Context, firstWrite bool, fn func(context.Context, *anamnesis.Store) error) error {
	s, err := openStoreFor(c, firstWrite)
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(c.Context, s)
}
