package claudecode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
	"github.com/anamnesis-memory/anamnesis/note"
)

// Defaults of the Claude Code hooks.
const (
	// ContextBudget bounds injected text. Claude Code caps hook output at
	// 10,000 characters and moves anything longer to a file; staying well
	// under keeps the notes in Claude's context.
	ContextBudget = 8000
	// DefaultK is how many of the project's durable notes SessionStart
	// considers; the budget decides how many fit whole and how many
	// more are listed by title.
	DefaultK = 100
	// PromptK is how many notes one prompt may add.
	PromptK = 3
	// PromptBudget bounds what one prompt adds.
	PromptBudget = 4000
)

// Time bounds of a capture (SessionEnd, PreCompact). Claude Code gives
// all SessionEnd hooks together 1.5 s unless a hook's timeout raises it
// (init and the plugin write 5 s), then cancels the hook and tells the
// user ("Hook cancelled"); PreCompact holds up the compaction while it
// runs.
const (
	// TranscriptReadBudget bounds the transcript read
	// (MaxTranscriptBytes bounds its size): a read still going then
	// stops, and the note is made of what it read.
	TranscriptReadBudget = time.Second
	// CaptureBudget bounds a whole capture (read, summary, write and
	// commit): under init's 5 s, with room for the process's start and
	// exit.
	CaptureBudget = 4 * time.Second
)

// Memory is what the hooks need of a store; the root package's Store
// satisfies it. The Store decides which notes qualify; this package
// decides what Claude is shown and how.
type Memory interface {
	// Inject returns the notes a session of project starts with, in the
	// order they should fill the budget (the project's own first, global
	// notes last), at most k of the project's durable notes, and how many
	// live notes the project and global memory hold in all.
	Inject(ctx context.Context, project string, k int) (notes []index.Hit, projectTotal, globalTotal int, err error)
	// Recall returns up to limit notes relevant to a prompt, none when
	// the prompt shares no distinctive word with any note.
	Recall(ctx context.Context, prompt string, limit int) ([]index.Hit, error)
	// SaveSession writes the episodic note of n.ProvSession, or updates
	// the one an earlier capture of that session wrote.
	SaveSession(ctx context.Context, n *note.Note) (id, path string, updated bool, err error)
	// Arrived returns the live notes of project that arrived from other
	// machines after since.
	Arrived(ctx context.Context, project string, since time.Time) ([]index.Hit, error)
}

// Env is what the hooks need besides their stdin.
type Env struct {
	Memory   Memory
	StateDir string // per-session state (what each session was shown) lives here
	UserHome string // the project-marker search stops below it
	K        int    // project notes at SessionStart (0: DefaultK)
	Budget   int    // characters of context (0: ContextBudget)
}

// Events are the Claude Code hook events anamnesis handles, as named on
// `anamnesis hook NAME`.
func Events() []string {
	return []string{"session-start", "prompt", "session-end", "pre-compact", "pre-tool-use"}
}

// Result is what one hook did.
type Result struct {
	// Output is the hook JSON for stdout; "" prints nothing.
	Output string
	// Report is one line for stderr saying what was written, if anything.
	Report string
	// WantsSync says a background sync is worth starting: a session
	// begins (other machines may have written) or a session note was
	// committed (other machines should get it).
	WantsSync bool
}

// StartsFresh reports whether a SessionStart may find notes other
// machines wrote since this machine last looked: a startup or resume
// may; a clear or compact continues on this machine.
func StartsFresh(in Input) bool {
	return in.Source == "" || in.Source == "startup" || in.Source == "resume"
}

// Handle runs the hook for event (one of Events) on its input.
func Handle(ctx context.Context, event string, env Env, in Input) (Result, error) {
	switch event {
	case "session-start":
		out, err := SessionStart(ctx, env, in)
		// A resume or startup may find notes other machines wrote; a
		// clear or compact continues on this machine.
		return Result{Output: out, WantsSync: err == nil && StartsFresh(in)}, err
	case "prompt":
		out, err := Prompt(ctx, env, in)
		return Result{Output: out}, err
	case "pre-tool-use":
		return Result{Output: PreToolUse(in)}, nil
	case "session-end", "pre-compact":
		if event == "session-end" {
			// Off SessionStart's path, where the user waits.
			defer pruneState(env.StateDir, time.Now())
		}
		ctx, cancel := context.WithTimeout(ctx, CaptureBudget)
		defer cancel()
		res, err := Capture(ctx, env, in, event)
		if err != nil {
			return Result{}, err
		}
		var r Result
		switch {
		case res.Skipped != "":
			r.Report = fmt.Sprintf("nothing captured (%s)", res.Skipped)
		case res.Updated:
			r.Report = "updated session note " + res.ID
		default:
			r.Report = "wrote session note " + res.ID
		}
		// PreCompact's note is synced by the SessionEnd that follows.
		r.WantsSync = res.ID != "" && event == "session-end"
		return r, nil
	}
	return Result{}, fmt.Errorf("unknown Claude Code hook %q (one of %s)", event, strings.Join(Events(), ", "))
}

// SessionStart selects the notes to inject (Memory.Inject), renders them
// in order within the budget (whole notes only: one that does not fit is
// skipped and a later, smaller one may still fit), says what it left out,
// and returns the hook output ("" when there is nothing to say). A resumed
// session already holds what it was shown: only notes it has not seen
// are injected then.
func SessionStart(ctx context.Context, env Env, in Input) (string, error) {
	project := ProjectKey(in.Cwd, env.UserHome)
	k := env.K
	if k <= 0 {
		k = DefaultK
	}
	// Taken before the notes are read: a note a background sync brings
	// in while they are read is shown again with the next prompt rather
	// than never.
	now := time.Now().UnixNano()
	notes, projectTotal, globalTotal, err := env.Memory.Inject(ctx, project, k)
	if err != nil {
		return "", err
	}
	st, err := loadState(env.StateDir, in.SessionID)
	if err != nil {
		return "", err
	}
	if in.Source != "resume" {
		st.Injected, st.Shown = nil, nil // a new, cleared or compacted context holds nothing
	}
	if st.Started == 0 || in.Source == "startup" {
		// Notes that arrive from now on are shown with the next prompt.
		st.Started = now
	}
	all := notes
	seen := st.seen()
	notes = slices.DeleteFunc(slices.Clone(notes), func(h index.Hit) bool { return seen[h.ID] })
	if len(notes) == 0 {
		return "", saveState(env.StateDir, in.SessionID, st)
	}
	budget := env.Budget
	if budget <= 0 {
		budget = ContextBudget
	}
	// The project key comes from the repository's remote or directory
	// name: text from outside too, so Escape and Inert (memoryBlock).
	shown := note.Escape(project)
	attrs := fmt.Sprintf(" project=%q", shown)
	head := fmt.Sprintf("Notes from anamnesis memory, shared across this user's machines (project %s first, then global notes). They record facts, decisions and past sessions; the memory_search tool finds more.\n", shown)
	body, ids, listed := startLayout(notes, budget-memoryBlockSize-len(Inert(attrs+head))-300, project)
	if len(ids)+len(listed) == 0 {
		return "", saveState(env.StateDir, in.SessionID, st)
	}
	// What the session holds now: this injection and, on a resume, the
	// earlier ones. A note listed by title only is not held: a prompt
	// may still bring it whole.
	for _, id := range ids {
		seen[id] = true
	}
	projectShown, globalShown := countShown(all, seen, listed, project)
	tail := leftOut(shown, projectTotal-projectShown, globalTotal-globalShown)
	text := memoryBlock(attrs, head+body+tail)
	st.add(ids)
	st.remember(notes, append(ids, listed...), false)
	if err := saveState(env.StateDir, in.SessionID, st); err != nil {
		return "", err
	}
	return Output("SessionStart", text), nil
}

// countShown counts the notes of all the session holds (seen) or was
// given the titles of (listed): the project's, and the rest.
func countShown(all []index.Hit, seen map[string]bool, listed []string, project string) (projectShown, globalShown int) {
	named := map[string]bool{}
	for _, id := range listed {
		named[id] = true
	}
	for _, h := range all {
		switch {
		case !seen[h.ID] && !named[h.ID]:
		case h.Project == project && project != note.DefaultProject:
			projectShown++
		default:
			globalShown++
		}
	}
	return projectShown, globalShown
}

// leftOut says how many live notes the session was not shown, so the
// model knows to search for more.
func leftOut(project string, projectLeft, globalLeft int) string {
	var parts []string
	if projectLeft > 0 && project != note.DefaultProject {
		parts = append(parts, fmt.Sprintf("%d more %s of project %s", projectLeft, textfmt.Plural(projectLeft, "note", "notes"), project))
	}
	if globalLeft > 0 {
		parts = append(parts, fmt.Sprintf("%d global %s", globalLeft, textfmt.Plural(globalLeft, "note", "notes")))
	}
	if len(parts) == 0 {
		return ""
	}
	return "\nLeft out here: " + strings.Join(parts, " and ") + "; memory_search finds them.\n"
}

// Prompt returns what this prompt adds to the session, within
// PromptBudget: first the notes of the project that arrived from other
// machines since the session started (a background sync brought them),
// then the best few notes recalled for the prompt (Memory.Recall); never
// a note the session was already shown. "" when there is nothing.
func Prompt(ctx context.Context, env Env, in Input) (string, error) {
	st, err := loadState(env.StateDir, in.SessionID)
	if err != nil {
		return "", err
	}
	if st.Started == 0 {
		// No SessionStart recorded (the hook was added mid-session):
		// arrivals count from now on.
		st.Started = time.Now().UnixNano()
		if err := saveState(env.StateDir, in.SessionID, st); err != nil {
			return "", err
		}
	}
	seen := st.seen()
	var fresh []index.Hit
	if in.SessionID != "" {
		if fresh, err = arrivals(ctx, env, in, &st); err != nil {
			return "", err
		}
		// Each arrival is new to the session: a note it has not seen, or
		// a new version of one it has.
		for _, h := range fresh {
			seen[h.ID] = true
		}
	}
	hits, err := env.Memory.Recall(ctx, in.Prompt, PromptK*3)
	if err != nil {
		return "", err
	}
	recalled := unseen(hits, seen, PromptK)
	const attrs = ` source="prompt"`
	text, ids := promptNotes(fresh, recalled, PromptBudget-memoryBlockSize-len(attrs), &st)
	if len(ids) == 0 {
		return "", saveState(env.StateDir, in.SessionID, st)
	}
	st.add(ids)
	st.remember(append(fresh, recalled...), ids, true)
	if err := saveState(env.StateDir, in.SessionID, st); err != nil {
		return "", err
	}
	return Output("UserPromptSubmit", memoryBlock(attrs, text)), nil
}

// arrivals are the project's notes that arrived from other machines
// since the session started or was last checked; the check is recorded
// in st.
func arrivals(ctx context.Context, env Env, in Input, st *sessionState) ([]index.Hit, error) {
	since := max(st.Started, st.Checked)
	st.Checked = time.Now().UnixNano() // before asking: nothing falls between two checks
	return env.Memory.Arrived(ctx, ProjectKey(in.Cwd, env.UserHome), time.Unix(0, since))
}

// unseen is the first k of hits the session has not seen.
func unseen(hits []index.Hit, seen map[string]bool, k int) []index.Hit {
	var out []index.Hit
	for _, h := range hits {
		if seen[h.ID] {
			continue
		}
		out = append(out, h)
		if len(out) == k {
			break
		}
	}
	return out
}

// promptNotes renders, within budget, the arrivals under their heading
// and then the recalled notes under theirs, and returns the text and the
// ids rendered ("" and none when nothing fits).
func promptNotes(fresh, recalled []index.Hit, budget int, st *sessionState) (string, []string) {
	var text strings.Builder
	var ids []string
	if len(fresh) > 0 {
		const head = "Notes that arrived from this user's other machines since this session started:\n"
		body, shown := renderRemarked(fresh, budget-len(head), st.remarks(fresh))
		if len(shown) > 0 {
			text.WriteString(head + body)
			budget -= len(head) + len(body)
			ids = append(ids, shown...)
		}
	}
	if len(recalled) > 0 {
		head := "Notes from anamnesis memory that match this prompt:\n"
		if len(ids) > 0 {
			head = "\n" + head
		}
		body, shown := renderNotes(recalled, budget-len(head))
		if len(shown) > 0 {
			text.WriteString(head + body)
			ids = append(ids, shown...)
		}
	}
	return text.String(), ids
}

// CaptureResult says what a capture did.
type CaptureResult struct {
	ID, Path string
	Updated  bool   // an earlier capture of this session was updated
	Skipped  string // why nothing was written
}

// Capture turns the session transcript into one episodic note (redacted),
// or updates the note an earlier capture of the same session wrote (a
// PreCompact followed by SessionEnd), and commits it. A session that did
// nothing worth keeping (WorthKeeping) is Skipped, with the reason.
//
// The read stops after TranscriptReadBudget and the note is made of what
// it read. When ctx ends (the hook's process was told to stop) nothing is
// written: ctx's error is returned. A note is written whole or not at all
// (the Store's writes are atomic), so stopping never leaves half a note.
func Capture(ctx context.Context, env Env, in Input, source string) (CaptureResult, error) {
	if in.TranscriptPath == "" {
		return CaptureResult{Skipped: "no transcript_path in the hook input"}, nil
	}
	readCtx, cancel := context.WithTimeout(ctx, TranscriptReadBudget)
	sess, err := ReadTranscript(readCtx, in.TranscriptPath)
	cancel()
	partial := false
	switch {
	case ctx.Err() != nil:
		return CaptureResult{}, fmt.Errorf("capture stopped, nothing written: %w", ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		partial = true
	case err != nil:
		return CaptureResult{}, err
	}
	if sess.SessionID == "" {
		sess.SessionID = in.SessionID
	}
	cwd := sess.Cwd
	if cwd == "" {
		cwd = in.Cwd
	}
	if keep, why := WorthKeeping(sess); !keep {
		return CaptureResult{Skipped: why}, nil
	}
	// Redact the raw texts before the summary clips them: a clipped secret
	// no longer has the shape the patterns recognise.
	sess.FirstPrompt, sess.LastOutcome = Redact(sess.FirstPrompt), Redact(sess.LastOutcome)
	// Paths relative to the project root (or under "~"): this machine's
	// absolute paths mean nothing on the user's other machines.
	root := projectRoot(cwd)
	for i, f := range sess.FilesTouched {
		sess.FilesTouched[i] = Redact(displayPath(f, root, env.UserHome))
	}
	title, body := Summarize(sess)
	if partial || sess.OmittedBytes > 0 {
		body += "\n\n_Made from part of the session's transcript: " + readPart(sess, partial) + "._\n"
	}
	title, body = Redact(title), Redact(body)
	project := ProjectKey(cwd, env.UserHome)
	// Titles and projects refuse control characters; a prompt's first line
	// (or a directory name) may hold a tab or an escape, which must not
	// cost the session its note.
	title, project = note.StripControls(title), note.StripControls(project)
	if title == "" {
		title = "Session summary"
	}
	if project == "" {
		project = note.DefaultProject
	}
	if err := ctx.Err(); err != nil {
		return CaptureResult{}, fmt.Errorf("capture stopped, nothing written: %w", err)
	}
	id, path, updated, err := env.Memory.SaveSession(ctx, &note.Note{
		Type: note.TypeEpisodic, Title: title, Body: body, Project: project, Tags: []string{"session", source},
		ProvSource: "session-end", ProvSession: sess.SessionID,
	})
	if err != nil {
		return CaptureResult{}, err
	}
	return CaptureResult{ID: id, Path: path, Updated: updated}, nil
}

// readPart says which part of the transcript a capture read.
func readPart(sess Session, stopped bool) string {
	var parts []string
	if sess.OmittedBytes > 0 {
		parts = append(parts, fmt.Sprintf("its middle (%d MB) was longer than a capture reads", (sess.OmittedBytes+1<<19)>>20))
	}
	if stopped {
		parts = append(parts, fmt.Sprintf("the read stopped after %d lines, at its time limit", sess.Lines))
	}
	return strings.Join(parts, "; ")
}
