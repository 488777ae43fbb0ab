package claudecode

import (
	"path"
	"strings"
)

// WorthKeeping decides whether a session gets an episodic note, and says
// why in a few words (the reason is the CaptureResult's Skipped when not).
// A session is worth a note when it did something:
//
//   - it changed files: an Edit, Write, MultiEdit or NotebookEdit tool use;
//   - it ran state-changing shell work: a Bash tool use with a command
//     StateChanging recognises (commits, pushes, moves, removes, installs,
//     migrations, deploys);
//   - it recorded a decision: decision language (DecisionIn) in a prompt
//     or in the assistant's text. When the session also wrote a durable
//     note (mcp__anamnesis__memory_write), the decision is already kept
//     there, and an episodic note would only echo the exchange, so a
//     decision alone is then not enough.
//
// A durable note written by the session is not a reason on its own, for
// the same reason. A greeting, a question answered without a change or a
// decision, or a lone slash command gets no note: such notes only echo a
// question and crowd out real sessions at recall.
func WorthKeeping(s Session) (bool, string) {
	if len(s.FilesTouched) > 0 {
		return true, "files changed"
	}
	for _, c := range s.Commands {
		if StateChanging(c) {
			return true, "state-changing command"
		}
	}
	prompts, replies := s.Prompts, s.Replies
	if len(prompts) == 0 && s.FirstPrompt != "" { // a Session not from ReadTranscript
		prompts = []string{s.FirstPrompt}
	}
	if len(replies) == 0 && s.LastOutcome != "" {
		replies = []string{s.LastOutcome}
	}
	decided := false
	for _, p := range prompts {
		decided = decided || DecisionIn(p, true)
	}
	for _, r := range replies {
		decided = decided || DecisionIn(r, false)
	}
	switch {
	case decided && s.MemoryWrites == 0:
		return true, "decision recorded"
	case decided:
		return false, "its decision was saved as a durable note"
	case s.MemoryWrites > 0:
		return false, "only a durable note was written"
	case len(prompts) == 0:
		return false, "no prompt"
	case len(prompts) == 1 && loneSlashCommand().MatchString(prompts[0]):
		return false, "a lone slash command"
	}
	return false, "no file changed, no state-changing command, no decision"
}

var loneSlashCommand = lazyRegexp(`^/\S+$`)

// Decision language. Matched per sentence, lower-cased, with code blocks
// and inline code removed; a sentence ending in "?" is a question, not a
// decision. The lists are kept short on purpose: a phrase here turns a
// plain question-and-answer session into a note.
var (
	// decisionPhrases, in a prompt or in the assistant's text: an explicit
	// decision ("we decided", "decision:"), a choice ("let's go with",
	// "we'll use"), or a rule for later ("from now on", "going forward").
	decisionPhrases = lazyRegexp(`\bdecision:|\b(?:(?:we|i)(?:'ve| have)? decided|it was decided|let'?s (?:go|stick|settle) (?:with|on)|we(?:'ll| will) (?:use|go with|stick with|keep using)|we(?:'re| are) going with|from now on|going forward)\b`)
	// instructionPhrases, in a prompt only: an instruction to remember,
	// or an always/never rule ("Always run gofmt", "never push to main").
	// The assistant explains with "always" and "never" too often for them
	// to count in its text.
	instructionPhrases = lazyRegexp(`^(?:please |and |also |so )?(?:remember|always|never|don't ever|do not ever)\b|\b(?:please|always) remember\b|\bremember (?:that|this)\b|\bkeep in mind\b|\bdon't forget\b|\b(?:you|we) (?:should|must) (?:always|never)\b`)
	codeFence          = lazyRegexp("(?s)```.*?(?:```|$)")
	inlineCode         = lazyRegexp("`[^`\n]*`")
	sentenceRe         = lazyRegexp(`[^.!?\n]+[.!?]*`)
)

// DecisionIn reports decision language in text: decisionPhrases anywhere,
// and, when human (a prompt), instructionPhrases too.
func DecisionIn(text string, human bool) bool {
	text = strings.ToLower(strings.ReplaceAll(text, "’", "'"))
	text = inlineCode().ReplaceAllString(codeFence().ReplaceAllString(text, " "), " ")
	for _, sent := range sentenceRe().FindAllString(text, -1) {
		sent = strings.TrimSpace(sent)
		if sent == "" || strings.HasSuffix(sent, "?") {
			continue
		}
		if decisionPhrases().MatchString(sent) || human && instructionPhrases().MatchString(sent) {
			return true
		}
	}
	return false
}

// StateChanging reports whether a shell command changes state that
// outlives the session. Each simple command (split at ; & | && || and
// new lines, quotes respected, here-documents skipped) is looked at
// after leading variable assignments and wrappers (sudo, env, time,
// nohup, nice, timeout, xargs, exec, command); it changes state when it
// is:
//
//   - git commit, push, merge, rebase, reset, revert, cherry-pick, am,
//     apply, mv, rm, restore, clean, or tag/branch with a name or -d/-D/-m;
//   - rm, rmdir, mv, cp, mkdir, ln, chmod, chown, touch, truncate, unlink,
//     install, rsync, shred; sed or perl editing in place (-i); unless
//     every path it changes (for cp, ln, install and rsync: the
//     destination) is scratch space (/tmp, /var/tmp, $TMPDIR);
//   - a package install or removal: npm/pnpm/yarn/bun (install, i, ci,
//     add, remove, uninstall, update, upgrade, link, publish), pip, uv,
//     poetry, pipx, cargo, gem, bundle, composer, go (get, install,
//     generate, mod tidy/init/edit/vendor), apt, apt-get, dnf, yum,
//     zypper, apk, brew, snap, pacman -S/-R/-U; a bare "yarn"; make
//     install, uninstall, deploy, release, migrate or publish;
//   - a migration: an argument "migrate", "makemigrations", "migrate:*"
//     or "db:migrate|rollback|seed|reset|drop|create", alembic
//     upgrade/downgrade, goose or dbmate up/down;
//   - a deploy: kubectl apply/create/delete/replace/patch/scale/set/edit
//     and rollout restart/undo/pause/resume, helm install/upgrade/uninstall/rollback, terraform or
//     tofu apply/destroy/import, docker push, gh pr create/merge/close,
//     gh release create/delete, gh repo create/delete, systemctl
//     start/stop/restart/reload/enable/disable.
//
// Output redirection (">") does not count: it mostly goes to scratch
// files and logs, and files Claude means to change go through the edit
// tools. Reading, building and testing (ls, cat, grep, git status, go
// test, make) do not count either.
func StateChanging(command string) bool {
	for _, words := range simpleCommands(command) {
		if changes(unwrap(words)) {
			return true
		}
	}
	return false
}

var assignment = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*=`)

// unwrap drops leading assignments and command wrappers with their
// options.
func unwrap(w []string) []string {
	for len(w) > 0 {
		switch name := path.Base(w[0]); {
		case assignment().MatchString(w[0]):
			w = w[1:]
		case name == "sudo" || name == "doas" || name == "env" || name == "time" || name == "nohup" || name == "nice" ||
			name == "exec" || name == "command" || name == "xargs" || name == "timeout":
			w = w[1:]
			for len(w) > 0 && strings.HasPrefix(w[0], "-") {
				w = w[1:]
			}
			if name == "timeout" && len(w) > 0 {
				w = w[1:] // the duration
			}
		default:
			return w
		}
	}
	return w
}

var (
	gitChanges = set("commit", "push", "merge", "rebase", "reset", "revert", "cherry-pick", "am", "apply", "mv", "rm", "restore", "clean")
	fileOps    = set("rm", "rmdir", "mv", "cp", "mkdir", "ln", "chmod", "chown", "touch", "truncate", "unlink", "install", "rsync", "shred")
	copies     = set("cp", "ln", "install", "rsync")
	jsInstall  = set("install", "i", "ci", "add", "remove", "rm", "uninstall", "un", "update", "upgrade", "up", "link", "publish")
	pkgInstall = map[string]map[string]bool{
		"npm": jsInstall, "pnpm": jsInstall, "yarn": jsInstall, "bun": jsInstall,
		"pip": set("install", "uninstall"), "pip3": set("install", "uninstall"), "pipx": set("install", "uninstall", "upgrade"),
		"uv":     set("add", "remove", "sync"),
		"poetry": set("add", "remove", "install", "update", "publish"),
		"cargo":  set("install", "uninstall", "add", "remove", "update", "publish"),
		"gem":    set("install", "uninstall", "update"), "bundle": set("install", "add", "update", "remove"),
		"composer": set("install", "require", "remove", "update"),
		"go":       set("get", "install", "generate"),
		"apt":      set("install", "remove", "purge", "upgrade", "full-upgrade", "autoremove", "reinstall"),
		"apt-get":  set("install", "remove", "purge", "upgrade", "dist-upgrade", "autoremove", "reinstall"),
		"dnf":      set("install", "remove", "erase", "upgrade", "update", "reinstall"),
		"yum":      set("install", "remove", "erase", "upgrade", "update", "reinstall"),
		"zypper":   set("install", "in", "remove", "rm", "update", "up"),
		"apk":      set("add", "del", "upgrade"),
		"brew":     set("install", "uninstall", "remove", "upgrade", "reinstall", "tap"),
		"snap":     set("install", "remove", "refresh"),
		"make":     set("install", "uninstall", "deploy", "release", "migrate", "publish"),
	}
	deploys = map[string]map[string]bool{
		"kubectl":   set("apply", "create", "delete", "replace", "patch", "scale", "set", "edit"),
		"helm":      set("install", "upgrade", "uninstall", "rollback"),
		"terraform": set("apply", "destroy", "import"), "tofu": set("apply", "destroy", "import"),
		"docker":    set("push"),
		"systemctl": set("start", "stop", "restart", "reload", "enable", "disable"),
		"alembic":   set("upgrade", "downgrade"),
		"goose":     set("up", "down", "up-to", "down-to", "reset"), "dbmate": set("up", "down", "migrate", "rollback"),
	}
	ghChanges    = map[string]map[string]bool{"pr": set("create", "merge", "close"), "release": set("create", "delete"), "repo": set("create", "delete")}
	goModChanges = set("tidy", "init", "edit", "vendor")
	// sed's and perl's -i, alone or after flags that take no argument.
	sedInPlace  = lazyRegexp(`^-[nErsuz]*i`)
	perlInPlace = lazyRegexp(`^-[nplaswWtTuUcv]*i`)
	migration   = lazyRegexp(`^(?:migrate|makemigrations|migrate:\S+|db:(?:migrate|rollback|seed|reset|drop|create)\S*)$`)
)

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// changes looks at one unwrapped simple command.
func changes(w []string) bool {
	if len(w) == 0 {
		return false
	}
	name, args := path.Base(w[0]), w[1:]
	for _, a := range args {
		if migration().MatchString(a) {
			return true
		}
	}
	if strings.HasPrefix(name, "python") && len(args) >= 2 && args[0] == "-m" {
		name, args = args[1], args[2:] // python -m pip install
	}
	sub := firstWord(args)
	switch {
	case name == "git":
		return gitChange(args)
	case fileOps[name]:
		if copies[name] && len(args) > 0 {
			return !scratchOnly(args[len(args)-1:]) // only the destination changes
		}
		return !scratchOnly(args)
	case name == "sed" || name == "perl":
		inPlace := sedInPlace()
		if name == "perl" {
			inPlace = perlInPlace()
		}
		for _, a := range args {
			if a == "--in-place" || strings.HasPrefix(a, "--in-place=") || inPlace.MatchString(a) {
				return !scratchOnly(args)
			}
		}
		return false
	case name == "go" && sub == "mod":
		return goModChanges[firstWord(args[1:])]
	case name == "uv" && sub == "pip":
		return set("install", "uninstall", "sync")[firstWord(args[1:])]
	case name == "kubectl" && sub == "rollout":
		return set("restart", "undo", "pause", "resume")[firstWord(args[1:])]
	case name == "yarn" && sub == "":
		return true // a bare yarn installs
	case name == "pacman":
		for _, a := range args {
			if strings.HasPrefix(a, "-S") || strings.HasPrefix(a, "-R") || strings.HasPrefix(a, "-U") {
				return true
			}
		}
		return false
	case name == "gh":
		return len(args) >= 2 && ghChanges[args[0]][args[1]]
	}
	return pkgInstall[name][sub] || deploys[name][sub]
}

// scratchOnly: every path a file operation names is scratch space (/tmp,
// /var/tmp, $TMPDIR, /dev/null), which does not outlive the session.
func scratchOnly(args []string) bool {
	paths := 0
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.HasPrefix(a, "s/") || strings.HasPrefix(a, "+") {
			continue // options, a sed script, a chmod mode
		}
		paths++
		if !strings.HasPrefix(a, "/tmp/") && !strings.HasPrefix(a, "/var/tmp/") && a != "/dev/null" &&
			!strings.HasPrefix(a, "$TMPDIR") && !strings.HasPrefix(a, "${TMPDIR") {
			return false
		}
	}
	return paths > 0
}

// firstWord is the first argument that is not an option.
func firstWord(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// gitChange: git's global options (-C dir, -c k=v take a value), then the
// subcommand.
func gitChange(args []string) bool {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		if (args[0] == "-C" || args[0] == "-c") && len(args) > 1 {
			args = args[1:]
		}
		args = args[1:]
	}
	if len(args) == 0 {
		return false
	}
	sub, rest := args[0], args[1:]
	if gitChanges[sub] {
		return true
	}
	if sub == "tag" || sub == "branch" {
		for _, a := range rest {
			switch {
			case a == "-d" || a == "-D" || a == "-m" || a == "-M" || a == "--delete" || a == "--move" || a == "-f" || a == "--force":
				return true
			case a == "-l" || a == "--list" || a == "-a" || a == "-r" || a == "-v" || a == "-vv" || a == "--show-current" ||
				a == "--contains" || a == "--merged" || a == "--no-merged" || a == "-n":
				return false
			case !strings.HasPrefix(a, "-"):
				return true // a name: create
			}
		}
	}
	return false
}

// simpleCommands splits a shell command line into the words of its
// simple commands. It is no shell: quotes group words, a backslash
// escapes, "#" at a word's start comments out the line, and the bodies
// of here-documents are skipped (they are data, often a commit message).
func simpleCommands(line string) [][]string {
	var (
		cmds    [][]string
		words   []string
		word    strings.Builder
		inWord  bool
		heredoc []string // delimiters whose bodies start at the next new line
	)
	endWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
			words = nil
		}
	}
	r := []rune(line)
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\\' && i+1 < len(r):
			i++
			if r[i] != '\n' {
				word.WriteRune(r[i])
				inWord = true
			}
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(r) && r[j] != c {
				if c == '"' && r[j] == '\\' && j+1 < len(r) {
					j++
				}
				j++
			}
			word.WriteString(string(r[i+1 : min(j, len(r))]))
			inWord = true
			i = j
		case c == '#' && !inWord:
			for i < len(r) && r[i] != '\n' {
				i++
			}
			i-- // the new line ends the command
		case c == '<' && i+1 < len(r) && r[i+1] == '<' && (i+2 >= len(r) || r[i+2] != '<'):
			endWord()
			i += 2
			if i < len(r) && r[i] == '-' {
				i++
			}
			for i < len(r) && (r[i] == ' ' || r[i] == '\t') {
				i++
			}
			j := i
			for j < len(r) && !strings.ContainsRune(" \t\n;&|<>()", r[j]) {
				j++
			}
			if d := strings.Trim(string(r[i:j]), `'"`); d != "" {
				heredoc = append(heredoc, d)
			}
			i = j - 1
		case c == '\n':
			endCmd()
			for _, d := range heredoc { // skip each body through its delimiter line
				for i+1 < len(r) {
					end := i + 1
					for end < len(r) && r[end] != '\n' {
						end++
					}
					body := strings.TrimLeft(string(r[i+1:end]), "\t")
					i = end
					if body == d {
						break
					}
				}
			}
			heredoc = nil
		case c == ';' || c == '&' || c == '|' || c == '(' || c == ')':
			endCmd()
		case c == ' ' || c == '\t' || c == '\r':
			endWord()
		default:
			word.WriteRune(c)
			inWord = true
		}
	}
	endCmd()
	return cmds
}
