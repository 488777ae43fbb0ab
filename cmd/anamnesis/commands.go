package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/githooks"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/urfave/cli/v2"
)

func filterFlags(withK bool) []cli.Flag {
	fs := []cli.Flag{
		&cli.StringFlag{Name: "project", Usage: "only notes of this project"},
		&cli.StringFlag{Name: "type", Usage: "only notes of this type (procedural, semantic, episodic)"},
		&cli.StringFlag{Name: "scope", Usage: "only portable or machine-local notes (default: both)"},
		jsonFlag,
	}
	if withK {
		fs = append(fs, &cli.IntFlag{Name: "k", Aliases: []string{"n"}, Value: index.DefaultK, Usage: "how many notes to return"})
	} else {
		fs = append(fs, &cli.IntFlag{Name: "limit", Usage: "at most this many notes (default: all)"})
	}
	return fs
}

func filterFrom(c *cli.Context, limit int) index.Filter {
	return index.Filter{Project: c.String("project"), Type: c.String("type"), Scope: c.String("scope"), Limit: limit}
}

func writeCommand() *cli.Command {
	return &cli.Command{
		Name:      "write",
		Usage:     "write a new note and print its id",
		ArgsUsage: " ",
		Description: "The body comes from --body, --body-file, or standard input when it is piped.\n" +
			"Types: procedural (how-tos, decisions, fixes), semantic (facts, preferences, conventions),\n" +
			"episodic (what happened). Portable notes sync to your other machines; machine-local ones never leave this one.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "type", Usage: "procedural, semantic or episodic (required)"},
			&cli.StringFlag{Name: "title", Usage: "one-line title (required)"},
			&cli.StringFlag{Name: "body", Usage: "note text"},
			&cli.StringFlag{Name: "body-file", Usage: "read the note text from this file (- for stdin)"},
			&cli.StringFlag{Name: "project", Usage: "project key (default global)"},
			&cli.StringFlag{Name: "tags", Usage: "comma-separated tags"},
			&cli.StringFlag{Name: "scope", Value: note.ScopePortable, Usage: "portable or machine-local"},
			&cli.StringSliceFlag{Name: "supersedes", Usage: "id of a note this one replaces (repeatable)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("write takes no arguments (got %q); pass the body with --body", c.Args().First())
			}
			for _, f := range []string{"type", "title"} {
				if !c.IsSet(f) {
					return usagef("write needs --%s", f)
				}
			}
			body, err := readBody(c)
			if err != nil {
				return err
			}
			var tags []string
			if t := c.String("tags"); t != "" {
				tags = strings.Split(t, ",")
			}
			var sup []string
			for _, v := range c.StringSlice("supersedes") {
				sup = append(sup, strings.Split(v, ",")...)
			}
			return withStoreFor(c, true, func(ctx context.Context, s *anamnesis.Store) error {
				n, path, err := s.Write(ctx, anamnesis.WriteRequest{
					Type: c.String("type"), Title: c.String("title"), Body: body, Project: c.String("project"),
					Tags: tags, Scope: c.String("scope"), Supersedes: sup,
				})
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c.App.Writer, map[string]string{"id": n.ID, "path": path})
				}
				fmt.Fprintln(c.App.Writer, n.ID)
				return nil
			})
		},
	}
}

func readBody(c *cli.Context) (string, error) {
	body, file := c.String("body"), c.String("body-file")
	switch {
	case c.IsSet("body") && file != "":
		return "", usagef("give the body with --body or --body-file, not both")
	case c.IsSet("body"):
		return body, nil
	case file == "-":
		return readAllLimited(c.App.Reader, "standard input")
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("read body: %w", err)
		}
		defer f.Close()
		return readAllLimited(f, file)
	}
	if f, ok := c.App.Reader.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return "", usagef("no body: pass --body TEXT, --body-file FILE, or pipe the text on standard input")
		}
	}
	return readAllLimited(c.App.Reader, "standard input")
}

func readAllLimited(r io.Reader, what string) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, note.MaxFileSize+1))
	if err != nil {
		return "", fmt.Errorf("read body from %s: %w", what, err)
	}
	if len(data) > note.MaxFileSize-4096 {
		return "", fmt.Errorf("body from %s is too large: a note is at most %d bytes", what, note.MaxFileSize)
	}
	return strings.TrimRight(string(data), "\n"), nil
}

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print one note",
		ArgsUsage: "ID",
		Flags:     []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("show takes exactly one note id")
			}
			id := c.Args().First()
			if !note.ValidID(id) {
				return usagef("%q is not a note id (ids are letters, digits, - and _)", id)
			}
			return withStore(c, func(ctx context.Context, s *anamnesis.Store) error {
				n, path, data, err := s.GetFile(ctx, id)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					h := index.Hit{Note: *n, Path: path}
					return printJSON(c.App.Writer, toJSON(h, false))
				}
				_, err = rawWriter(c.App.Writer).Write(data)
				return err
			})
		},
	}
}

func listCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list notes, newest first (superseded notes included)",
		Flags: filterFlags(false),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("list takes no arguments; filter with --project, --type, --scope")
			}
			if err := atLeastOne(c, "limit", " (leave it out for every note)"); err != nil {
				return err
			}
			return withStore(c, func(ctx context.Context, s *anamnesis.Store) error {
				hits, err := s.List(ctx, filterFrom(c, c.Int("limit")))
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printResults(c.App.Writer, hits, false)
				}
				sup, err := s.Index().SupersededIDs(ctx)
				if err != nil {
					return err
				}
				superseded := map[string]bool{}
				for _, id := range sup {
					superseded[id] = true
				}
				for _, h := range hits {
					mark := ""
					if superseded[h.ID] {
						mark = "  (superseded)"
					}
					fmt.Fprintf(c.App.Writer, "%s  %s  %-10s  %s  %s%s\n", h.ID, dateOf(h.UpdatedAt), h.Type, h.Project, clip(h.Title, 100), mark)
				}
				if len(hits) == 0 {
					fmt.Fprintln(c.App.ErrWriter, "no notes")
				}
				return nil
			})
		},
	}
}

func dateOf(ts string) string {
	if len(ts) >= 10 {
		return ts[:10]
	}
	return ts
}

func searchCommand() *cli.Command {
	return &cli.Command{
		Name:      "search",
		Usage:     "find the notes most relevant to some words",
		ArgsUsage: "QUERY...",
		Description: "Ranks notes by BM25 over title, body and tags (any of the query's words may match),\n" +
			"newest first on ties. Notes replaced by another note (supersedes) are left out.\n" +
			"With --decay-days D (or recall_decay_days in config.json) the best matches are re-ranked\n" +
			"by score x exp(-age/D), so older notes fade; off by default.\n" +
			"Flags may follow the query; put -- before a query that itself contains one of these flags.",
		Flags: append(filterFlags(true), decayFlag),
		Action: func(c *cli.Context) error {
			if !c.Args().Present() {
				return usagef("search needs a query")
			}
			if c.Int("k") < 1 {
				return usagef("-k must be at least 1, got %d", c.Int("k"))
			}
			query := strings.Join(c.Args().Slice(), " ")
			return withStore(c, func(ctx context.Context, s *anamnesis.Store) error {
				hits, err := s.Search(ctx, query, filterFrom(c, c.Int("k")))
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printResults(c.App.Writer, hits, true)
				}
				if len(hits) == 0 {
					fmt.Fprintln(c.App.ErrWriter, "no matching notes")
				}
				for i, h := range hits {
					fmt.Fprintf(c.App.Writer, "%d. [%s] %s\n   %s · %s · %s\n", i+1, h.Type, h.Title, h.ID, h.Project, dateOf(h.UpdatedAt))
					for _, l := range snippet(h.Body, 2, 100) {
						fmt.Fprintf(c.App.Writer, "   %s\n", l)
					}
				}
				return nil
			})
		},
	}
}

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show note counts, index state and sync state",
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			return withStore(c, func(ctx context.Context, s *anamnesis.Store) error {
				st, err := s.Status(ctx)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c.App.Writer, st)
				}
				w := c.App.Writer
				fmt.Fprintf(w, "home:    %s\n", st.Home)
				fmt.Fprintf(w, "notes:   %d (%s; %s)\n", st.Notes.Total, counts(st.Notes.ByType, note.Types),
					counts(st.Notes.ByScope, []string{note.ScopePortable, note.ScopeMachineLocal}))
				last := st.Index.LastIndexedCommit
				if last == "" {
					last = "none"
				}
				fmt.Fprintf(w, "index:   %s (%s, last indexed commit %s)\n", st.Index.Path, plural(st.Index.Notes, "note", "notes"), last)
				if n := len(st.Index.Skipped); n > 0 {
					fmt.Fprintf(w, "skipped: %s not indexed:\n", plural(n, "file", "files"))
					for _, f := range st.Index.Skipped {
						fmt.Fprintf(w, "  %s: %s\n", f.Path, f.Error)
					}
				}
				remote := st.Sync.Remote
				if remote == "" {
					remote = "none (local only)"
				}
				fmt.Fprintf(w, "sync:    remote %s\n", remote)
				if st.Sync.Head != "" {
					dirty := ""
					if st.Sync.Dirty {
						dirty = " (uncommitted changes; the next sync commits them)"
					}
					fmt.Fprintf(w, "         head %s%s\n", st.Sync.Head[:12], dirty)
				}
				if n := len(st.Sync.ConflictCopies); n > 0 {
					fmt.Fprintf(w, "         %s waiting to be reconciled:\n", plural(n, "conflict copy", "conflict copies"))
					for _, p := range st.Sync.ConflictCopies {
						fmt.Fprintf(w, "           %s\n", p)
					}
				}
				fmt.Fprintf(w, "tailnet: %s\n", st.Sync.Tailnet)
				return nil
			})
		},
	}
}

func counts(m map[string]int, order []string) string {
	var parts []string
	seen := map[string]bool{}
	for _, k := range order {
		seen[k] = true
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	var rest []string
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func reindexCommand() *cli.Command {
	return &cli.Command{
		Name:  "reindex",
		Usage: "bring the index in line with the note files",
		Description: "By default only files whose size or modification time changed since the last\n" +
			"reindex are read, so hand edits, new files and deletions are picked up cheaply.\n" +
			"--full drops the index and rebuilds it from every file.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "full", Usage: "rebuild the whole index from the files"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			return withStore(c, func(ctx context.Context, s *anamnesis.Store) error {
				var rep anamnesis.ReconcileReport
				var err error
				if c.Bool("full") {
					rep, err = s.Rebuild(ctx)
				} else {
					rep, err = s.Reconcile(ctx)
				}
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c.App.Writer, map[string]any{
						"added": rep.Added, "updated": rep.Updated, "deleted": rep.Deleted,
						"indexed": rep.Indexed, "skipped": skippedJSON(rep.Bad),
					})
				}
				fmt.Fprintf(c.App.Writer, "reindex: %d added, %d updated, %d deleted; %s indexed\n",
					rep.Added, rep.Updated, rep.Deleted, plural(rep.Indexed, "note", "notes"))
				if len(rep.Bad) > 0 {
					fmt.Fprintf(c.App.Writer, "skipped %s:\n", plural(len(rep.Bad), "file", "files"))
					for _, f := range rep.Bad {
						fmt.Fprintf(c.App.Writer, "  %s: %s\n", f.Path, f.Error)
					}
				}
				return nil
			})
		},
	}
}

func skippedJSON(bad []index.File) []map[string]string {
	out := []map[string]string{}
	for _, f := range bad {
		out = append(out, map[string]string{"path": f.Path, "error": f.Error})
	}
	return out
}

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check the store and explain anything that needs attention",
		Description: "Checks the note trees, the index (SQLite integrity check included), note files that cannot be indexed, conflict copies,\n" +
			"the sync lock, git lock files left by a killed git, the remote, the git and Claude Code hooks\n" +
			"and the tailnet. Each finding says how to fix it. Exit code 1 when something is broken.\n" +
			"--fix repairs what is safe to repair without asking: it removes stale git lock files and\n" +
			"rebuilds the index from the note files when it is damaged or its search postings disagree with FTS5.",
		Flags: []cli.Flag{jsonFlag, &cli.BoolFlag{Name: "fix", Usage: "remove git lock files left by a killed git process, rebuild a damaged index or one whose postings disagree with FTS5, then check"}},
		Action: func(c *cli.Context) error {
			return withStore(c, func(ctx context.Context, s *anamnesis.Store) error {
				var fixed []string
				var why string
				if c.Bool("fix") {
					removed, err := anamnesis.FixStaleGitLocks(ctx, s)
					if err != nil {
						return err
					}
					fixed = removed
					if why, err = anamnesis.FixIndex(ctx, s); err != nil {
						return err
					}
					if !c.Bool("json") {
						for _, p := range removed {
							fmt.Fprintf(c.App.Writer, "removed stale git lock %s\n", p)
						}
						if why != "" {
							fmt.Fprintf(c.App.Writer, "rebuilt the index from the note files (%s)\n", why)
						}
					}
				}
				checks := anamnesis.Doctor(ctx, s)
				checks = append(checks, anamnesis.SyncChecks(ctx, s)...)
				checks = append(checks, gitHooksCheck(s), claudeHooksCheck(c))
				if c.Bool("json") {
					report := map[string]any{"checks": checks}
					if c.Bool("fix") {
						report["removed"] = append([]string{}, fixed...)
						report["rebuilt_index"] = why != ""
					}
					if err := printJSON(c.App.Writer, report); err != nil {
						return err
					}
				} else {
					for _, ch := range checks {
						fmt.Fprintf(c.App.Writer, "%-7s %s: %s\n", ch.State+":", ch.Name, ch.Detail)
						for _, l := range ch.Items {
							fmt.Fprintf(c.App.Writer, "          %s\n", l)
						}
						if ch.Fix != "" {
							fmt.Fprintf(c.App.Writer, "          fix: %s\n", ch.Fix)
						}
					}
				}
				for _, ch := range checks {
					if ch.State == anamnesis.CheckProblem {
						return cli.Exit("", 1)
					}
				}
				return nil
			})
		},
	}
}

// gitHooksCheck reports whether the git hooks are installed (the hooks
// package sits above the root package, so the check is composed here).
func gitHooksCheck(s *anamnesis.Store) anamnesis.Check {
	repo := filepath.Join(s.Home(), note.PortableDir)
	states, err := githooks.Status(repo)
	if err != nil {
		return anamnesis.Check{Name: "git hooks", State: anamnesis.CheckWarn, Detail: err.Error()}
	}
	var missing, chained []string
	for _, st := range states {
		if st.Status != "installed" {
			missing = append(missing, st.Hook+" ("+st.Status+")")
		}
		if st.Chained != "" {
			chained = append(chained, st.Hook)
		}
	}
	if len(missing) > 0 {
		return anamnesis.Check{Name: "git hooks", State: anamnesis.CheckWarn, Detail: "not installed: " + strings.Join(missing, ", "),
			Fix: "run `anamnesis hooks install` (only needed if you use git by hand in memory/)"}
	}
	detail := "installed"
	if len(chained) > 0 {
		detail += "; your own hooks still run after them: " + strings.Join(chained, ", ")
	}
	return anamnesis.Check{Name: "git hooks", State: anamnesis.CheckOK, Detail: detail}
}

// claudeHooksCheck reports whether settings.json runs this binary's hooks
// for this home: exactly what `init` would write, so a moved binary or a
// hand edit shows up as out of date rather than as installed.
func claudeHooksCheck(c *cli.Context) anamnesis.Check {
	st, err := resolveSetup(c)
	if err != nil {
		return anamnesis.Check{Name: "claude code hooks", State: anamnesis.CheckWarn, Detail: err.Error()}
	}
	plan, err := claudecode.PlanSettings(st.claudeDir, st.binary, st.home, true)
	if err != nil {
		return anamnesis.Check{Name: "claude code hooks", State: anamnesis.CheckWarn, Detail: err.Error()}
	}
	if !plan.Changed {
		return anamnesis.Check{Name: "claude code hooks", State: anamnesis.CheckOK, Detail: "installed in " + plan.Path}
	}
	fix := "run `anamnesis init` (add --no-mcp/--no-sync to change only the hooks)"
	if remove, err := claudecode.PlanSettings(st.claudeDir, st.binary, st.home, false); err == nil && remove.Changed {
		return anamnesis.Check{Name: "claude code hooks", State: anamnesis.CheckWarn,
			Detail: "out of date in " + plan.Path + " (another binary path or home, or edited by hand)", Fix: fix}
	}
	return anamnesis.Check{Name: "claude code hooks", State: anamnesis.CheckWarn,
		Detail: "not installed in " + plan.Path + ": Claude Code sessions get no memory", Fix: fix}
}
