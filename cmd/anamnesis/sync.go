package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/internal/logfile"
	"github.com/urfave/cli/v2"
)

func syncCommand() *cli.Command {
	return &cli.Command{
		Name:  "sync",
		Usage: "commit local notes, exchange them with the remote, merge, reindex what changed",
		Description: "The remote comes from ANAMNESIS_GIT_REMOTE or config.json \"remote\": a path to a bare\n" +
			"repository, file://, ssh:// or user@host:path (~/.ssh/config applied, agent keys and key files\n" +
			"offered, known_hosts checked, never a prompt), or http(s)://. Without a remote, notes are\n" +
			"committed locally. The hub's main is synced; a hub without main (created with master) is synced\n" +
			"on its default branch.\n" +
			"Edits of the same note on two machines are merged; when both changed the same lines the\n" +
			"newer version stays and the other is kept as <note>.conflict-<hash>.md (see `anamnesis status`).\n" +
			"Before syncing, Claude Code's auto memory on this machine is imported (`anamnesis native import`;\n" +
			"\"native_import\": false in config.json turns it off).",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "timeout", Value: 60 * time.Second, Usage: "give up on a fetch or push when no data moved for this long (a long transfer that keeps moving is fine)"},
			&cli.DurationFlag{Name: "wait", Value: 30 * time.Second, Usage: "wait this long for another sync to finish"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			for _, f := range []string{"timeout", "wait"} {
				if err := positiveDuration(c, f); err != nil {
					return err
				}
			}
			// A first sync into an empty directory sets up the store, like
			// a first write: that is how a second machine starts.
			return withStore(c, forFirstWrite, func(ctx context.Context, s *anamnesis.Store) error {
				defer spawnEmbed(c, s) // vectors follow in the background
				// Claude Code's auto memory is imported first, so this
				// sync carries it; an import that fails is reported and
				// the sync goes on (the memories are not ours to lose,
				// and the next sync tries again).
				native, nerr := s.ImportNative(ctx, anamnesis.NativeOptions{})
				// A read-only home: the sync refuses the same way, once.
				if nerr != nil && !errors.Is(nerr, anamnesis.ErrReadOnly) {
					fmt.Fprintf(c.App.ErrWriter, "anamnesis: importing Claude Code's memory: %v\n", nerr)
				}
				start := time.Now()
				rep, err := s.Sync(ctx, anamnesis.SyncOptions{Timeout: c.Duration("timeout"), LockWait: c.Duration("wait")})
				logForeground(c, s.Home(), rep, err, time.Since(start))
				for _, warning := range rep.Warnings {
					fmt.Fprintf(c.App.ErrWriter, "anamnesis: %s\n", warning)
				}
				if nerr == nil {
					rep.Native = &native
				}
				if c.Bool("json") && err == nil {
					return printJSON(c.App.Writer, rep)
				}
				if err != nil {
					return err
				}
				printSync(c.App.Writer, rep, native)
				return nil
			})
		},
	}
}

// printSync is sync's text: the remote, what moved, the native import,
// the reindex, the peers and the conflict copies left.
func printSync(w io.Writer, rep anamnesis.SyncReport, native anamnesis.NativeReport) {
	remote := rep.Remote
	if remote == "" {
		remote = "none (committed locally; set ANAMNESIS_GIT_REMOTE or config.json remote)"
	}
	fmt.Fprintf(w, "sync: remote %s\n", remote)
	if rep.BranchNote != "" {
		fmt.Fprintf(w, "sync: %s (this machine's branch stays main)\n", rep.BranchNote)
	}
	fmt.Fprintf(w, "sync: committed=%v fetched=%v merged=%v pushed=%v head=%s\n", rep.Committed, rep.Fetched, rep.Merged, rep.Pushed, rep.Head[:min(len(rep.Head), 12)])
	printNative(w, "sync: native", native, false)
	fmt.Fprintf(w, "sync: reindexed %d added, %d updated, %d deleted\n", rep.Reindexed.Added, rep.Reindexed.Updated, rep.Reindexed.Deleted)
	for _, p := range rep.Peers {
		if p.Error != "" {
			fmt.Fprintf(w, "sync: peer %s: %s\n", p.URL, p.Error)
		} else {
			fmt.Fprintf(w, "sync: peer %s: fetched=%v merged=%v\n", p.URL, p.Fetched, p.Merged)
		}
	}
	for _, u := range rep.Unreachable {
		fmt.Fprintf(w, "sync: peer not reachable: %s\n", u)
	}
	for _, cp := range rep.ConflictCopies {
		fmt.Fprintf(w, "sync: conflict copy %s (both versions kept; merge them and delete the copy)\n", cp)
	}
}

// loggedRunEnv marks a run whose whole output already goes to a log
// (runLogged): a background sync's report is that log's block.
const loggedRunEnv = "ANAMNESIS_LOGGED_RUN"

// logForeground appends a sync run in a terminal to state/sync.log, in
// the format the background syncs write (one stamped block ending with
// "exit N after D"), so `anamnesis ui` and doctor see every sync, not
// only those the hooks started. A log that cannot be written costs the
// sync nothing.
func logForeground(c *cli.Context, home string, rep anamnesis.SyncReport, err error, took time.Duration) {
	if envOf(c).getenv(loggedRunEnv) != "" {
		return
	}
	buf := logfile.NewLogBuffer(os.Getpid(), nil)
	code := 0
	if err != nil {
		code = 1
		fmt.Fprintf(buf, "anamnesis: %v\n", err)
	} else {
		fmt.Fprintf(buf, "sync: committed=%v fetched=%v merged=%v pushed=%v (in a terminal)\n", rep.Committed, rep.Fetched, rep.Merged, rep.Pushed)
	}
	fmt.Fprintf(buf, "exit %d after %s\n", code, took.Round(time.Millisecond))
	dir := filepath.Join(home, "state")
	if logfile.PrivateDir(dir) == nil {
		_ = logfile.AppendLog(filepath.Join(dir, "sync.log"), buf.Bytes(), logfile.MaxLogSize)
	}
}
