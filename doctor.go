package anamnesis

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/githooks"
	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/platform"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
)

// Check states reported by Doctor.
const (
	CheckOK      = "ok"
	CheckWarn    = "warn"
	CheckProblem = "problem"
)

// Check is one finding of Doctor, written for a person.
type Check struct {
	Name   string   `json:"name"`
	State  string   `json:"state"`
	Detail string   `json:"detail"`
	Items  []string `json:"items,omitempty"`
	Fix    string   `json:"fix,omitempty"`
}

// fixDamage is the advice for a damaged index (doctor --fix rebuilds it).
const fixDamage = "run `anamnesis doctor --fix` (or `anamnesis reindex --full`): the index is rebuilt from the note files"

// Install says where this store's hooks should point, so that Doctor can
// check they are in place: exactly what `anamnesis init` would write.
type Install struct {
	// Binary is the anamnesis binary the hooks run (absolute).
	Binary string
	// ClaudeDir is Claude Code's configuration directory.
	ClaudeDir string
	// ClaudeJSON is the file holding Claude Code's user-scope MCP
	// servers (claudecode.ClaudeJSON).
	ClaudeJSON string
	// Problem, when set, says why the above could not be found; the hook
	// checks report it.
	Problem string
}

// Doctor inspects the store without changing it and explains what it
// finds: writable trees, damage to the index file, whether the index
// agrees with the files, note files that cannot be indexed, the sync lock
// and git lock files, the remote, and the git and Claude Code hooks. Every
// error it meets is reported as a finding; none is skipped.
func (s *Store) Doctor(ctx context.Context, inst Install) []Check {
	out := s.storeChecks(ctx)
	out = append(out, s.syncChecks(ctx)...)
	return append(out, s.gitHooksCheck(), s.claudeHooksCheck(inst), s.mcpCheck(inst))
}

// mcpCheck reports how Claude Code reaches the MCP server: registered by
// init (user scope, as init would write it), by the plugin, or both,
// which gives Claude every memory tool twice (mcp__anamnesis__… and
// mcp__plugin_anamnesis_anamnesis__…) and both schemas in every request.
func (s *Store) mcpCheck(inst Install) Check {
	const name = "mcp server"
	if inst.Problem != "" || inst.ClaudeJSON == "" {
		return Check{Name: name, State: CheckWarn, Detail: cmp.Or(inst.Problem, "Claude Code's configuration was not found")}
	}
	reg, err := claudecode.ReadMCPRegistration(inst.ClaudeJSON)
	if err != nil {
		return Check{Name: name, State: CheckWarn, Detail: err.Error()}
	}
	plugin, err := claudecode.FindPlugin(inst.ClaudeDir)
	if err != nil {
		return Check{Name: name, State: CheckWarn, Detail: err.Error()}
	}
	var local string
	if len(reg.Projects) > 0 {
		local = fmt.Sprintf("; also registered at local scope in %s (`claude mcp remove --scope local anamnesis` in each removes it)", strings.Join(reg.Projects, ", "))
	}
	switch {
	case plugin != "" && reg.User != nil:
		return Check{Name: name, State: CheckWarn,
			Detail: "registered twice: by init in " + inst.ClaudeJSON + " (mcpServers.anamnesis) and by the Claude Code plugin " + plugin +
				": Claude gets every memory tool twice, with both schemas in every request" + local,
			Fix: "run `claude mcp remove --scope user anamnesis` (the plugin's server stays), or `anamnesis init`, which does the same when the plugin is enabled"}
	case plugin != "":
		return Check{Name: name, State: CheckOK, Detail: "served by the Claude Code plugin " + plugin + local}
	case reg.User == nil:
		return Check{Name: name, State: CheckWarn, Detail: "not registered in " + inst.ClaudeJSON + ": Claude cannot search or write memory" + local,
			Fix: "run `anamnesis init` (add --no-claude/--no-sync to change only the MCP registration)"}
	case !claudecode.SameMCPServer(reg.User, inst.Binary, s.home):
		return Check{Name: name, State: CheckWarn, Detail: "registered in " + inst.ClaudeJSON + " for another binary or home, or edited by hand" + local,
			Fix: "run `anamnesis init` (add --no-claude/--no-sync to change only the MCP registration)"}
	}
	return Check{Name: name, State: CheckOK, Detail: "registered in " + inst.ClaudeJSON + local}
}

// storeChecks are Doctor's findings about the trees, the index and the
// note files.
func (s *Store) storeChecks(ctx context.Context) []Check {
	var out []Check
	for _, t := range []struct{ name, dir string }{{"memory tree", s.memory.Root}, {"local tree", s.local.Root}} {
		out = append(out, writableCheck(t.name, t.dir))
	}
	out = append(out, s.linksCheck(ctx), s.integrityCheck(ctx), s.indexCheck(ctx), s.postingsCheck(ctx),
		s.conflictCopiesCheck(ctx), s.nativeCheck(ctx), s.embedderCheck(ctx))
	if c, ok := s.forksCheck(ctx); ok {
		out = append(out, c)
	}
	return append(out, s.noteFilesChecks(ctx)...)
}

// indexProblem is the check of an index that could not be read: fix is
// the remedy, unless the file is damaged (then fixDamage).
func (s *Store) indexProblem(name string, err error, fix string) Check {
	if index.IsCorrupt(err) {
		fix = fixDamage
	}
	return Check{Name: name, State: CheckProblem, Detail: s.idx().Explain(err).Error(), Fix: fix}
}

// integrityCheck is SQLite's quick_check of index.db.
func (s *Store) integrityCheck(ctx context.Context) Check {
	const name = "index integrity"
	switch problems, err := s.idx().IntegrityCheck(ctx); {
	case index.IsCorrupt(err):
		return Check{Name: name, State: CheckProblem,
			Detail: fmt.Sprintf("%s is damaged: SQLite's quick_check stopped at a damaged page", s.idx().Path()), Fix: fixDamage}
	case err != nil:
		return s.indexProblem(name, err, fixDamage)
	case len(problems) > 0:
		return Check{Name: name, State: CheckProblem,
			Detail: fmt.Sprintf("%s is damaged: SQLite's quick_check found %d problems", s.idx().Path(), len(problems)),
			Items:  problems, Fix: fixDamage}
	}
	return Check{Name: name, State: CheckOK, Detail: "SQLite's quick_check finds no damage"}
}

// indexCheck compares the index with the note files: what a reindex
// would change.
func (s *Store) indexCheck(ctx context.Context) Check {
	// Unguarded: doctor reports damage instead of repairing it.
	changes, err := s.plan(ctx)
	if err != nil {
		return s.indexProblem("index", err, "run `anamnesis reindex --full`")
	}
	st, err := s.idx().Stats(ctx)
	if err != nil {
		return s.indexProblem("index", err, "run `anamnesis reindex --full`")
	}
	var changed, gone int
	for _, ch := range changes {
		switch {
		case ch.Delete:
			gone++
		case ch.StatOnly:
		case ch.Note != nil || ch.File.Error != "":
			changed++
		}
	}
	if n := changed + gone; n > 0 {
		return Check{Name: "index", State: CheckWarn,
			Detail: fmt.Sprintf("%d note files changed since the last reindex (%d new or edited, %d removed)", n, changed, gone),
			Fix:    "run `anamnesis reindex`"}
	}
	return Check{Name: "index", State: CheckOK, Detail: fmt.Sprintf("agrees with the note files (%d notes)", st.Total)}
}

// postingsCheck compares our postings with FTS5's: search ranks by ours.
func (s *Store) postingsCheck(ctx context.Context) Check {
	const name = "search postings"
	rep, err := s.idx().CheckPostings(ctx)
	switch {
	case err != nil:
		return s.indexProblem(name, err, "run `anamnesis reindex --full`")
	case rep.Differ > 0 || !rep.TotalOK:
		d := fmt.Sprintf("disagree with FTS5 for %d tokens", rep.Differ)
		if !rep.TotalOK {
			d += " and in the note or token totals"
		}
		return Check{Name: name, State: CheckProblem, Detail: d + ": search would rank differently",
			Items: rep.Mismatched, Fix: "run `anamnesis reindex --full`"}
	}
	return Check{Name: name, State: CheckOK, Detail: fmt.Sprintf("agree with FTS5 (%d tokens)", rep.Tokens)}
}

// conflictCopiesCheck lists the conflict copies waiting for a decision.
func (s *Store) conflictCopiesCheck(ctx context.Context) Check {
	const name = "conflict copies"
	copies, err := s.conflictCopies(ctx)
	switch {
	case err != nil:
		return s.indexProblem(name, err, "run `anamnesis reindex --full`")
	case len(copies) > 0:
		return Check{Name: name, State: CheckWarn,
			Detail: fmt.Sprintf("%d notes were edited on two machines at once; both versions are kept (each copy's conflict_of names its note)", len(copies)),
			Items:  copies,
			Fix:    "keep one version with `anamnesis resolve ID --keep ID`, or merge them with `anamnesis resolve ID --body-file F` (or ask Claude to use memory_resolve)"}
	}
	return Check{Name: name, State: CheckOK, Detail: "none waiting"}
}

// forksCheck names the notes superseded on two machines at once (ok is
// false when there are none, or they cannot be read: said nothing of).
func (s *Store) forksCheck(ctx context.Context) (Check, bool) {
	forks, err := s.idx().Forks(ctx)
	if err != nil || len(forks) == 0 {
		return Check{}, false
	}
	var items []string
	for of, succ := range forks {
		items = append(items, fmt.Sprintf("%s is replaced by %s", of, strings.Join(succ, " and ")))
	}
	slices.Sort(items)
	return Check{Name: "rival successors", State: CheckWarn,
		Detail: fmt.Sprintf("%s superseded on two machines at once; every successor is live", textfmt.Count(len(forks), "note was", "notes were")),
		Items:  items, Fix: "keep one with `anamnesis resolve ID --keep ID` (it supersedes the others)"}, true
}

// noteFilesChecks are the files the index skipped (and the duplicate ids
// among the notes, when there are any).
func (s *Store) noteFilesChecks(ctx context.Context) []Check {
	var out []Check
	bad, err := s.idx().BadFiles(ctx)
	if c, ok := s.duplicatesCheck(ctx, bad); ok && err == nil {
		out = append(out, c)
	}
	switch {
	case err != nil:
		return append(out, s.indexProblem("note files", err, "run `anamnesis reindex --full`"))
	case len(bad) > 0:
		c := Check{Name: "note files", State: CheckWarn,
			Detail: fmt.Sprintf("%d files are skipped by the index", len(bad)),
			Fix:    "edit or remove each file named above, then run `anamnesis reindex`"}
		for _, f := range bad {
			c.Items = append(c.Items, f.Path+": "+f.Error)
		}
		return append(out, c)
	}
	detail := "every note file parses"
	if others, err := s.memory.OtherFiles(ctx); err == nil && len(others) > 0 {
		// Said once here, as information: a hub created with a
		// README is normal, and nothing needs fixing.
		detail += fmt.Sprintf("; %s (%s) %s synced but not indexed", textfmt.Count(len(others), "file that is not a note", "files that are not notes"),
			listSome(others, 3), textfmt.Plural(len(others), "is", "are"))
	}
	return append(out, Check{Name: "note files", State: CheckOK, Detail: detail})
}

// syncChecks looks at the git side: the sync lock (held, and by whom),
// the remote (configured, answering) and the tailnet when the remote is
// the mesh. It may take a few seconds (it asks the remote).
func (s *Store) syncChecks(ctx context.Context) []Check {
	var out []Check
	gitDir := s.gitDir()
	if !s.hasRepo() {
		return []Check{{Name: "git", State: CheckWarn, Detail: "memory/ is not a git repository yet", Fix: "run `anamnesis init` or `anamnesis sync`"}}
	}
	if pid, purpose, held, err := gitsync.HolderAs(gitDir); err == nil {
		if held {
			what := "another anamnesis process"
			switch purpose {
			case gitsync.PurposeSync:
				what = "a sync"
			case gitsync.PurposeWrite:
				what = "a write committing its note"
			}
			out = append(out, Check{Name: "sync lock", State: CheckWarn, Detail: fmt.Sprintf("held by process %d (%s)", pid, what),
				Fix: "wait for it; the lock is released when that process exits, even if it crashes"})
		} else {
			out = append(out, Check{Name: "sync lock", State: CheckOK, Detail: "free (a lock is released by the kernel when its holder dies, so it is never stale)"})
		}
	}
	if stale, err := gitsync.StaleGitLocks(gitDir, StaleGitLockAge); err != nil {
		out = append(out, Check{Name: "git lock files", State: CheckWarn, Detail: err.Error()})
	} else if len(stale) > 0 {
		out = append(out, Check{Name: "git lock files", State: CheckWarn,
			Detail: fmt.Sprintf("%d left by a killed git process; a hand `git` in memory/ fails until they go", len(stale)),
			Items:  stale, Fix: "run `anamnesis doctor --fix` (it removes only lock files older than two minutes)"})
	} else {
		out = append(out, Check{Name: "git lock files", State: CheckOK, Detail: "none left behind"})
	}
	remote := s.Remote()
	shown := gitsync.Redact(remote)
	switch r := ParseRemote(remote); {
	case strings.TrimSpace(remote) == "":
		out = append(out, Check{Name: "remote", State: CheckWarn, Detail: "none: notes stay on this machine",
			Fix: "set one with `anamnesis init --remote PATH-OR-URL` or ANAMNESIS_GIT_REMOTE"})
	case r.IsMesh():
		st := s.tailnetSummary(ctx)
		state := CheckOK
		if !st.Running && r.Tailnet {
			state = CheckProblem
		}
		out = append(out, Check{Name: "remote", State: state, Detail: "mesh (" + shown + "); tailnet: " + st.Text})
	default:
		repo, err := s.repo(ctx)
		if err == nil {
			err = repo.Reachable(ctx, r.Hub, 10*time.Second)
		}
		if err != nil {
			out = append(out, Check{Name: "remote", State: CheckProblem, Detail: shown + " does not answer: " + err.Error(),
				Fix: "check the path or URL and your network; local notes stay committed meanwhile"})
		} else {
			out = append(out, Check{Name: "remote", State: CheckOK, Detail: shown + " answers"})
		}
	}
	return out
}

// writableCheck asks the kernel whether dir may be written, without
// writing (platform.Writable): doctor is a reader, and only the holder of
// the sync lock may change memory/ (a file created there, even briefly,
// is a change a running sync could meet). A read-only mount answers EROFS.
func writableCheck(name, dir string) Check {
	if err := platform.Writable(dir); err != nil {
		return Check{Name: name, State: CheckProblem, Detail: fmt.Sprintf("%s is not writable: %v", dir, err),
			Fix: "check the permissions and free space of " + dir}
	}
	return Check{Name: name, State: CheckOK, Detail: dir + " is writable"}
}

// linksCheck names every link inside the store (FindLinks): each one is
// a place writes are refused, and a type directory that is one takes
// every note of its type (a session capture, say) out of the store.
func (s *Store) linksCheck(ctx context.Context) Check {
	const name = "links in the store"
	links, err := FindLinks(ctx, s.home)
	if err != nil {
		return Check{Name: name, State: CheckWarn, Detail: err.Error()}
	}
	if len(links) == 0 {
		return Check{Name: name, State: CheckOK, Detail: "none: every directory and file inside memory/, local/ and state/ is real"}
	}
	c := Check{Name: name, State: CheckProblem,
		Detail: textfmt.Count(len(links), "link", "links") + " inside the store, where anamnesis writes only real directories and files: writes through them are refused, and notes behind them are not indexed",
		Fix:    "run `anamnesis doctor --fix`: it removes the links (never what they point to) and recreates the directories; note files found where a directory link pointed are listed, not moved"}
	for _, l := range links {
		c.Items = append(c.Items, l.String())
	}
	return c
}

// StaleGitLockAge is how old a git lock file must be before doctor calls
// it stale: git holds one for milliseconds, so minutes leave a wide margin
// for a slow hand `git` still at work.
const StaleGitLockAge = 2 * time.Minute // doctor's fix text says "two minutes"

// FixReport says what Fix repaired.
type FixReport struct {
	// Removed are the stale git lock files removed.
	Removed []string `json:"removed"`
	// Links says which links inside the store were removed (FixLinks).
	Links LinkFixReport `json:"links"`
	// RebuiltIndex says the index was rebuilt from the note files, and
	// Reason why.
	RebuiltIndex bool   `json:"rebuilt_index"`
	Reason       string `json:"-"`
}

// Fix repairs what is safe to repair without asking, which is what
// `doctor --fix` does: it removes links inside the store (FixLinks, then
// reconciles the index with what is left), removes stale git lock files
// and rebuilds a damaged index or one whose postings disagree with FTS5.
// A link that keeps the store from opening (a linked index.db) needs
// FixLinks before Open, which the CLI's doctor --fix runs.
func (s *Store) Fix(ctx context.Context) (FixReport, error) {
	rep := FixReport{Removed: []string{}}
	links, err := FixLinks(ctx, s.home)
	rep.Links = links
	if err != nil {
		return rep, err
	}
	if len(links.Removed) > 0 {
		// Notes indexed through a removed link are gone from the store.
		if _, err := s.Reconcile(ctx); err != nil {
			return rep, err
		}
	}
	removed, err := s.fixStaleGitLocks(ctx)
	rep.Removed = append(rep.Removed, removed...)
	if err != nil {
		return rep, err
	}
	rep.Reason, err = s.fixIndex(ctx)
	rep.RebuiltIndex = rep.Reason != ""
	return rep, err
}

// fixStaleGitLocks removes git lock files in memory/.git older than
// StaleGitLockAge and returns their paths.
func (s *Store) fixStaleGitLocks(ctx context.Context) ([]string, error) {
	gitDir := s.gitDir()
	if !s.hasRepo() {
		return nil, nil
	}
	removed, err := gitsync.RemoveStaleGitLocks(ctx, gitDir, StaleGitLockAge)
	if err != nil {
		return removed, fmt.Errorf("clear stale git locks in %s: %w", gitDir, err)
	}
	return removed, nil
}

// fixIndex rebuilds the index from the note files when it is damaged
// (SQLite's integrity check finds problems, or reading it fails with
// damage) or its search postings disagree with FTS5, and says why it did
// ("" when nothing needed it).
func (s *Store) fixIndex(ctx context.Context) (string, error) {
	if err := s.writable("fix the index"); err != nil {
		return "", err
	}
	damaged := "it was damaged"
	reason := ""
	if problems, err := s.idx().IntegrityCheck(ctx); err != nil || len(problems) > 0 {
		reason = damaged
	} else if _, err := s.plan(ctx); index.IsCorrupt(err) {
		reason = damaged
	} else if rep, err := s.idx().CheckPostings(ctx); index.IsCorrupt(err) {
		reason = damaged
	} else if err != nil || rep.Differ > 0 || !rep.TotalOK {
		reason = "its search postings disagreed with FTS5"
	}
	if reason == "" {
		return "", nil
	}
	// Damage is rebuilt into a fresh file (in place would reuse damaged
	// pages), disagreeing postings in place.
	found := indexOutdated
	if reason == damaged {
		found = indexDamaged
	}
	if _, err := s.rebuild(ctx, rebuildRequest{found: found, asked: true}); err != nil {
		return "", fmt.Errorf("rebuild the index: %w", s.idx().Explain(err))
	}
	return reason, nil
}

// listSome names the first few items and says how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// gitHooksCheck reports whether the git hooks are installed in memory/.
func (s *Store) gitHooksCheck() Check {
	states, err := githooks.Status(s.memory.Root)
	if err != nil {
		return Check{Name: "git hooks", State: CheckWarn, Detail: err.Error()}
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
		return Check{Name: "git hooks", State: CheckWarn, Detail: "not installed: " + strings.Join(missing, ", "),
			Fix: "run `anamnesis hooks install` (only needed if you use git by hand in memory/)"}
	}
	detail := "installed"
	if len(chained) > 0 {
		detail += "; your own hooks still run after them: " + strings.Join(chained, ", ")
	}
	return Check{Name: "git hooks", State: CheckOK, Detail: detail}
}

// claudeHooksCheck reports whether settings.json runs inst.Binary's hooks
// for this home: exactly what `init` would write, so a moved binary or a
// hand edit shows up as out of date rather than as installed.
func (s *Store) claudeHooksCheck(inst Install) Check {
	if inst.Problem != "" {
		return Check{Name: "claude code hooks", State: CheckWarn, Detail: inst.Problem}
	}
	setup := claudecode.Setup{Binary: inst.Binary, Home: s.home}
	plugin, err := claudecode.FindPlugin(inst.ClaudeDir)
	if err != nil {
		return Check{Name: "claude code hooks", State: CheckWarn, Detail: err.Error()}
	}
	if plugin != "" {
		// The plugin's hooks run beside any init wrote; init's step aside
		// (--unless-plugin) unless an earlier version wrote them.
		if remove, err := claudecode.PlanSettings(inst.ClaudeDir, setup, false); err == nil && remove.Changed {
			return Check{Name: "claude code hooks", State: CheckWarn,
				Detail: "installed twice: by the plugin " + plugin + " and by init in " + remove.Path + " (hooks of an earlier init, without --unless-plugin, inject notes a second time)",
				Fix:    "run `anamnesis init`: with the plugin enabled it takes its own hooks out"}
		}
		return Check{Name: "claude code hooks", State: CheckOK, Detail: "run by the Claude Code plugin " + plugin}
	}
	plan, err := claudecode.PlanSettings(inst.ClaudeDir, setup, true)
	if err != nil {
		return Check{Name: "claude code hooks", State: CheckWarn, Detail: err.Error()}
	}
	if !plan.Changed {
		return Check{Name: "claude code hooks", State: CheckOK, Detail: "installed in " + plan.Path}
	}
	// init writes shell-form hooks for a Claude Code older than 2.1.139.
	setup.Form = claudecode.ShellForm
	if sh, err := claudecode.PlanSettings(inst.ClaudeDir, setup, true); err == nil && !sh.Changed {
		return Check{Name: "claude code hooks", State: CheckOK, Detail: "installed in " + plan.Path + " (shell form, for Claude Code before 2.1.139)"}
	}
	fix := "run `anamnesis init` (add --no-mcp/--no-sync to change only the hooks)"
	if remove, err := claudecode.PlanSettings(inst.ClaudeDir, setup, false); err == nil && remove.Changed {
		return Check{Name: "claude code hooks", State: CheckWarn,
			Detail: "out of date in " + plan.Path + " (another binary path or home, an earlier version, or edited by hand)", Fix: fix}
	}
	return Check{Name: "claude code hooks", State: CheckWarn,
		Detail: "not installed in " + plan.Path + ": Claude Code sessions get no memory", Fix: fix}
}

// nativeCheck says how many of Claude Code's own memories were imported,
// per project and machine (information: nothing here needs fixing).
func (s *Store) nativeCheck(ctx context.Context) Check {
	const name = "claude code memory"
	if s.config.NativeImportOff {
		return Check{Name: name, State: CheckOK, Detail: "not imported (native_import is false in config.json)"}
	}
	counts, err := s.idx().CountBySource(ctx, NativeSource)
	if err != nil {
		return Check{Name: name, State: CheckWarn, Detail: s.idx().Explain(err).Error()}
	}
	if len(counts) == 0 {
		return Check{Name: name, State: CheckOK, Detail: "no memories imported yet (`anamnesis sync` or `anamnesis native import` imports them)"}
	}
	total := 0
	var items []string
	for _, c := range counts {
		total += c.Notes
		items = append(items, fmt.Sprintf("%s: %s from %s", c.Project, textfmt.Count(c.Notes, "memory", "memories"), c.MachineID))
	}
	return Check{Name: name, State: CheckOK, Detail: textfmt.Count(total, "memory", "memories") + " imported from Claude Code's auto memory", Items: items}
}
