package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/internal/logfile"
	"github.com/anamnesis-memory/anamnesis/internal/platform"
	"github.com/urfave/cli/v2"
)

// logEnv names the log file a detached command (started by spawn) appends
// its report to. The command's output is collected in a logfile.LogBuffer
// and appended as one block when it ends, so reports of syncs started by
// several sessions at once never interleave, and none truncates another's.
const logEnv = "ANAMNESIS_LOG"

// runLogged runs a command a hook started in the background: its output
// and exit code go to the log in one block of lines stamped with time and
// pid (see logEnv), or to stderr, which is the same log opened for
// appending, if that fails.
func runLogged(ctx context.Context, logPath string) int {
	env := osEnv()
	env.vars = env.without(logEnv) // not for anything this command starts
	buf := logfile.NewLogBuffer(os.Getpid(), nil)
	start := time.Now()
	code := run(ctx, os.Args, env, os.Stdin, buf, buf)
	fmt.Fprintf(buf, "exit %d after %s\n", code, time.Since(start).Round(time.Millisecond))
	if err := logfile.AppendLog(logPath, buf.Bytes(), logfile.MaxLogSize); err != nil {
		fmt.Fprintf(os.Stderr, "anamnesis: %v\n", err)
		os.Stderr.Write(buf.Bytes())
	}
	return code
}

// spawnSync starts `anamnesis sync` detached, so the hook returns at once
// and Claude Code never waits for the network; a failure to start is one
// line on stderr.
func spawnSync(c *cli.Context, s *anamnesis.Store) {
	if err := spawnSelf(envOf(c), s.Home(), "sync"); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "anamnesis: background sync not started: %v\n", err)
	}
}

// startBackgroundReindex starts `anamnesis reindex` for a hook that found
// the index needing a rebuild (opening the store rebuilds it) and returns
// the hook's error line.
func startBackgroundReindex(env procEnv, home string, err error) error {
	bErr := spawnSelf(env, home, "reindex")
	if bErr != nil {
		return fmt.Errorf("%w; starting it in the background failed: %v (run `anamnesis reindex`)", err, bErr)
	}
	return fmt.Errorf("%w; rebuilding it in the background (log: %s)", err, filepath.Join(home, "state", "reindex.log"))
}

// spawn starts `anamnesis COMMAND` detached (platform.Detach: its own
// session or process group, no console, no stdio attached to the hook).
// The command writes its own report to <home>/state/COMMAND.log through logEnv, in one block when it ends; the
// log is also its stdout and stderr, opened for appending (never
// truncated: several hooks start syncs at once), so that whatever the
// runtime itself prints (a crash) is kept too.
func spawn(env procEnv, binary, storeHome, command string, args ...string) error {
	dir := filepath.Join(storeHome, "state")
	if err := logfile.PrivateDir(dir); err != nil {
		return err
	}
	logPath := filepath.Join(dir, command+".log")
	logf, err := logfile.OpenLog(logPath) // 0600 even if an older version made it 0644
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(binary, append([]string{"--home", storeHome, command}, args...)...)
	cmd.Env = append(env.without(logEnv), logEnv+"="+logPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Stdin = nil
	platform.Detach(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start background %s: %w", command, err)
	}
	return cmd.Process.Release()
}

// spawnSelf starts this binary's command detached (spawn).
func spawnSelf(env procEnv, home, command string, args ...string) error {
	bin, err := env.executable()
	if err != nil {
		return err
	}
	return spawn(env, bin, home, command, args...)
}
