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
	env.vars = append(env.without(logEnv), loggedRunEnv+"=1") // logEnv is not for anything this command starts
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

// syncBeforeInjecting starts `anamnesis sync` detached and waits for it
// up to budget, so that SessionStart injects what the hub or peers hold
// now. A sync that takes longer goes on in the background: what it
// brings reaches the session with its first prompt (as arrivals). It
// reports whether the sync finished in time.
func syncBeforeInjecting(ctx context.Context, c *cli.Context, s *anamnesis.Store, budget time.Duration) bool {
	env := envOf(c)
	bin, err := env.executable()
	var cmd *exec.Cmd
	if err == nil {
		cmd, err = startDetached(env, bin, s.Home(), "sync")
	}
	if err != nil {
		fmt.Fprintf(c.App.ErrWriter, "anamnesis: background sync not started: %v\n", err)
		return false
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t := time.NewTimer(budget)
	defer t.Stop()
	select {
	case err := <-done:
		return err == nil
	case <-t.C:
	case <-ctx.Done():
	}
	// Left running: it is detached, and outlives this hook.
	return false
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
	cmd, err := startDetached(env, binary, storeHome, command, args...)
	if err != nil {
		return err
	}
	return cmd.Process.Release()
}

// startDetached is spawn that leaves the started process to the caller,
// who may wait for it or release it.
func startDetached(env procEnv, binary, storeHome, command string, args ...string) (*exec.Cmd, error) {
	dir := filepath.Join(storeHome, "state")
	if err := logfile.PrivateDir(dir); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, command+".log")
	logf, err := logfile.OpenLog(logPath) // 0600 even if an older version made it 0644
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(binary, append([]string{"--home", storeHome, command}, args...)...)
	cmd.Env = append(env.without(logEnv), logEnv+"="+logPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Stdin = nil
	platform.Detach(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start background %s: %w", command, err)
	}
	return cmd, nil
}

// spawnSelf starts this binary's command detached (spawn).
func spawnSelf(env procEnv, home, command string, args ...string) error {
	bin, err := env.executable()
	if err != nil {
		return err
	}
	return spawn(env, bin, home, command, args...)
}

// promptSyncStamp is touched in state/ each time a hook starts a sync for
// open sessions; its modification time throttles the prompt hook's syncs.
const promptSyncStamp = "prompt-sync.stamp"

// promptSyncDue reports whether the prompt hook should start a sync: none
// was started in the last interval. It records the start (before it
// happens: two prompts at once start at most one more sync, and the
// sync lock serializes them). Any failure to read or write the stamp
// counts as not due: a prompt never pays for a broken state directory.
func promptSyncDue(home string, now time.Time, interval time.Duration) bool {
	return stampDue(home, promptSyncStamp, now, interval)
}

// stampDue reports whether the stamp file name in home's state/ is older
// than interval (or missing), and if so touches it: one start per
// interval of whatever it throttles. Failing to read or write it counts
// as not due.
func stampDue(home, name string, now time.Time, interval time.Duration) bool {
	p := filepath.Join(home, "state", name)
	if fi, err := os.Stat(p); err == nil {
		if age := now.Sub(fi.ModTime()); age >= 0 && age < interval {
			return false
		}
	} else if !os.IsNotExist(err) {
		return false
	}
	return touchStamp(home, name, now)
}

// markPromptSync records that a sync started now (promptSyncDue).
func markPromptSync(home string, now time.Time) bool {
	return touchStamp(home, promptSyncStamp, now)
}

// touchStamp sets the stamp file's time to now, creating it.
func touchStamp(home, name string, now time.Time) bool {
	dir := filepath.Join(home, "state")
	if err := logfile.PrivateDir(dir); err != nil {
		return false
	}
	p := filepath.Join(dir, name)
	if err := os.Chtimes(p, now, now); err == nil {
		return true
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return false
	}
	f.Close()
	return os.Chtimes(p, now, now) == nil
}
