package main

import (
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

// procEnv is what one run of the CLI takes from its process: the
// environment and the path of the anamnesis binary (for the detached
// commands it starts and the hooks it installs). main passes the real
// ones; tests run the CLI in-process with their own, so that tests in
// parallel never share a process environment (os.Setenv) and a detached
// command started in a test is the built binary, not the test binary.
type procEnv struct {
	// vars is the environment as os.Environ gives it (KEY=value; the last
	// of a repeated key wins, as for exec.Cmd.Env).
	vars []string
	// executable returns the path of this binary (os.Executable).
	executable func() (string, error)
}

// lookup returns the value of key in the environment and whether it is set.
func (e procEnv) lookup(key string) (string, bool) {
	for i := len(e.vars) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(e.vars[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// getenv is os.Getenv over this run's environment.
func (e procEnv) getenv(key string) string {
	v, _ := e.lookup(key)
	return v
}

// without returns the environment without key (for a child that must
// not inherit it).
func (e procEnv) without(key string) []string {
	out := make([]string, 0, len(e.vars))
	for _, kv := range e.vars {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return out
}

// osEnv is the process's own environment and binary, for main.
func osEnv() procEnv { return procEnv{vars: os.Environ(), executable: os.Executable} }

// envKey is where newApp keeps the run's procEnv in the app's Metadata.
const envKey = "anamnesis.env"

// envOf returns the environment of the run c belongs to.
func envOf(c *cli.Context) procEnv {
	if e, ok := c.App.Metadata[envKey].(procEnv); ok {
		return e
	}
	return osEnv() // an app newApp did not make (none today)
}

// envFlags are the global flags that take their value from the
// environment when not given (urfave/cli's EnvVars would read the
// process environment, not the run's).
var envFlags = [...]struct{ flag, env string }{
	{"home", "ANAMNESIS_HOME"},
	{"machine-id", "ANAMNESIS_MACHINE_ID"},
	{tailscaleSocketFlag, tailscaleSocketEnv},
}

// flagsFromEnv sets each of envFlags not given on the command line from
// the run's environment; it is the app's Before.
func flagsFromEnv(c *cli.Context) error {
	env := envOf(c)
	for _, f := range envFlags {
		if c.IsSet(f.flag) {
			continue
		}
		if v, ok := env.lookup(f.env); ok {
			if err := c.Set(f.flag, v); err != nil {
				return usagef("$%s: %v", f.env, err)
			}
		}
	}
	return nil
}
