package claudecode

import (
	"path"
	"slices"
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
	prompts, replies := s.exchange()
	decided := decidedIn(prompts, true) || decidedIn(replies, false)
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

// exchange is the session's prompts and the assistant's replies; a
// Session not from ReadTranscript may have only FirstPrompt and
// LastOutcome.
func (s *Session) exchange() (prompts, replies []string) {
	prompts, replies = s.Prompts, s.Replies
	if len(prompts) == 0 && s.FirstPrompt != "" {
		prompts = []string{s.FirstPrompt}
	}
	if len(replies) == 0 && s.LastOutcome != "" {
		replies = []string{s.LastOutcome}
	}
	return prompts, replies
}

// decidedIn reports decision language (DecisionIn) in any of texts.
func decidedIn(texts []string, human bool) bool {
	for _, t := range texts {
		if DecisionIn(t, human) {
			return true
		}
	}
	return false
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
		case wrappers[name]:
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
	wrappers   = set("sudo", "doas", "env", "time", "nohup", "nice", "exec", "command", "xargs", "timeout")
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
	// git tag's and branch's options that change refs, and those that
	// only list them.
	refWrites = set("-d", "-D", "-m", "-M", "--delete", "--move", "-f", "--force")
	refReads  = set("-l", "--list", "-a", "-r", "-v", "-vv", "--show-current", "--contains", "--merged", "--no-merged", "-n")
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
	if slices.ContainsFunc(args, migration().MatchString) {
		return true
	}
	if strings.HasPrefix(name, "python") && len(args) >= 2 && args[0] == "-m" {
		name, args = args[1], args[2:] // python -m pip install
	}
	switch {
	case name == "git":
		return gitChange(args)
	case fileOps[name]:
		if copies[name] && len(args) > 0 {
			return !scratchOnly(args[len(args)-1:]) // only the destination changes
		}
		return !scratchOnly(args)
	case name == "sed" || name == "perl":
		return editsInPlace(name, args)
	case name == "pacman":
		return slices.ContainsFunc(args, pacmanChanges)
	case name == "gh":
		return len(args) >= 2 && ghChanges[args[0]][args[1]]
	}
	return subcommandChanges(name, args)
}

// pacmanChanges: pacman's sync (-S), remove (-R) and upgrade (-U)
// operations, with whatever flags follow them.
func pacmanChanges(arg string) bool {
	return strings.HasPrefix(arg, "-S") || strings.HasPrefix(arg, "-R") || strings.HasPrefix(arg, "-U")
}

// editsInPlace: sed or perl given -i (or --in-place) on a path that is
// not scratch space.
func editsInPlace(name string, args []string) bool {
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
}

// subcommandChanges: a tool whose first word (and for go mod, uv pip and
// kubectl rollout, the word after it) says whether it installs, removes
// or deploys.
func subcommandChanges(name string, args []string) bool {
	sub := firstWord(args)
	switch {
	case name == "go" && sub == "mod":
		return goModChanges[firstWord(args[1:])]
	case name == "uv" && sub == "pip":
		return set("install", "uninstall", "sync")[firstWord(args[1:])]
	case name == "kubectl" && sub == "rollout":
		return set("restart", "undo", "pause", "resume")[firstWord(args[1:])]
	case name == "yarn" && sub == "":
		return true // a bare yarn installs
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
	return (sub == "tag" || sub == "branch") && refChanges(rest)
}

// refChanges: git tag or branch with these arguments deletes, moves or
// creates a ref, decided by the first argument that says which (a name
// alone creates); listing it does not.
func refChanges(args []string) bool {
	for _, a := range args {
		switch {
		case refWrites[a]:
			return true
		case refReads[a]:
			return false
		case !strings.HasPrefix(a, "-"):
			return true // a name: create
		}
	}
	return false
}

// simpleCommands splits a shell command line into the words of its
// simple commands. It is no shell: quotes group words, a backslash
// escapes, "#" at a word's start comments out the line, and the bodies
// of here-documents are skipped (they are data, often a commit message).
func simpleCommands(line string) [][]string {
	l := cmdLexer{r: []rune(line)}
	r := l.r
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\\' && i+1 < len(r):
			i = l.escaped(i)
		case c == '\'' || c == '"':
			i = l.quoted(i)
		case c == '#' && !l.inWord:
			i = l.comment(i)
		case c == '<' && l.heredocAt(i):
			i = l.heredoc(i)
		case c == '\n':
			l.endCmd()
			i = l.skipHeredocBodies(i)
		case strings.ContainsRune(";&|()", c):
			l.endCmd()
		case strings.ContainsRune(" \t\r", c):
			l.endWord()
		default:
			l.add(c)
		}
	}
	l.endCmd()
	return l.cmds
}

// cmdLexer is simpleCommands' state. Its methods each read one construct
// starting at rune i and return the index of its last rune.
type cmdLexer struct {
	r       []rune
	cmds    [][]string
	words   []string // the current command's
	word    strings.Builder
	inWord  bool
	pending []string // here-document delimiters whose bodies start at the next new line
}

func (l *cmdLexer) add(c rune) {
	l.word.WriteRune(c)
	l.inWord = true
}

func (l *cmdLexer) endWord() {
	if l.inWord {
		l.words = append(l.words, l.word.String())
		l.word.Reset()
		l.inWord = false
	}
}

func (l *cmdLexer) endCmd() {
	l.endWord()
	if len(l.words) > 0 {
		l.cmds = append(l.cmds, l.words)
		l.words = nil
	}
}

// escaped: a backslash keeps the next rune, or joins the lines.
func (l *cmdLexer) escaped(i int) int {
	i++
	if l.r[i] != '\n' {
		l.add(l.r[i])
	}
	return i
}

// quoted: '...' or "..." (where a backslash escapes) joins the word,
// quotes dropped; an unclosed quote runs to the end.
func (l *cmdLexer) quoted(i int) int {
	r, c := l.r, l.r[i]
	j := i + 1
	for j < len(r) && r[j] != c {
		if c == '"' && r[j] == '\\' && j+1 < len(r) {
			j++
		}
		j++
	}
	l.word.WriteString(string(r[i+1 : min(j, len(r))]))
	l.inWord = true
	return j
}

// comment skips to the end of the line, leaving the new line to end the
// command.
func (l *cmdLexer) comment(i int) int {
	for i < len(l.r) && l.r[i] != '\n' {
		i++
	}
	return i - 1
}

// heredocAt: "<<" or "<<-" starts a here-document at i; "<<<" is a
// here-string, data on the line itself.
func (l *cmdLexer) heredocAt(i int) bool {
	r := l.r
	return i+1 < len(r) && r[i+1] == '<' && (i+2 >= len(r) || r[i+2] != '<')
}

// heredoc reads "<<[-] DELIM" and remembers the delimiter (quotes
// dropped) for the next new line.
func (l *cmdLexer) heredoc(i int) int {
	r := l.r
	l.endWord()
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
		l.pending = append(l.pending, d)
	}
	return j - 1
}

// skipHeredocBodies skips, after the new line at i, the body of each
// pending here-document through its delimiter line.
func (l *cmdLexer) skipHeredocBodies(i int) int {
	r := l.r
	for _, d := range l.pending {
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
	l.pending = nil
	return i
}
