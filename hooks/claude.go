package hooks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
)

// Defaults of the Claude Code hooks.
const (
	// ContextBudget bounds injected text. Claude Code caps hook output at
	// 10,000 characters and moves anything longer to a file; staying well
	// under keeps the notes in Claude's context.
	ContextBudget = 8000
	// DefaultK is how many project notes SessionStart injects.
	DefaultK = 8
	// maxEpisodic is how many recent session notes SessionStart includes.
	maxEpisodic = 2
	// PromptK is how many notes one prompt may add.
	PromptK = 3
	// PromptBudget bounds what one prompt adds.
	PromptBudget = 4000
	// stateTTL: per-session state older than this is removed.
	stateTTL = 14 * 24 * time.Hour
)

// DistinctiveFraction is the relevance floor of per-prompt recall: a note
// is recalled only if it shares with the prompt a word that at most this
// fraction of notes contain. A fixed bm25 score cannot serve (scores grow
// with the store); CONTRIBUTING.md has the measurements behind the value.
const DistinctiveFraction = 0.02

// Env is what the Claude Code hooks need besides their stdin.
type Env struct {
	Store    *anamnesis.Store
	UserHome string // the project-marker search stops below it
	K        int    // project notes at SessionStart (0: DefaultK)
	Budget   int    // characters of context (0: ContextBudget)
}

func (e Env) stateDir() string { return filepath.Join(e.Store.Home(), "state") }

// Output renders the hook JSON Claude Code expects for context injection.
func Output(event, context string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep <anamnesis-memory> readable in logs and transcripts
	enc.Encode(map[string]any{"hookSpecificOutput": map[string]string{"hookEventName": event, "additionalContext": context}})
	return strings.TrimSuffix(b.String(), "\n")
}

// SessionStart selects the notes to inject as the Python tool does (every
// global note, then up to k notes of the current project, durable notes
// first and at most two recent session notes not yet reflected), renders
// them within the budget (whole notes only), and returns the hook output
// ("" when there is nothing to say).
func SessionStart(ctx context.Context, env Env, in Input) (string, error) {
	project := ProjectKey(in.Cwd, env.UserHome)
	k := env.K
	if k <= 0 {
		k = DefaultK
	}
	notes, total, err := selectInject(ctx, env.Store, project, k)
	if err != nil {
		return "", err
	}
	if len(notes) == 0 {
		return "", nil
	}
	budget := env.Budget
	if budget <= 0 {
		budget = ContextBudget
	}
	head := fmt.Sprintf("<anamnesis-memory project=%q>\nNotes from anamnesis memory, shared across this user's machines (project %s). They record facts, decisions and past sessions; the memory_search tool finds more.\n", project, project)
	body, ids := renderNotes(notes, budget-len(head)-200)
	left := total - len(ids)
	tail := ""
	if left > 0 {
		tail = fmt.Sprintf("\n%d more notes of this project and of global memory were left out here; memory_search finds them.\n", left)
	}
	text := head + body + tail + "</anamnesis-memory>"
	if len(ids) > 0 && in.SessionID != "" {
		if err := rememberInjected(env.stateDir(), in.SessionID, ids); err != nil {
			return "", err
		}
	}
	if len(ids) == 0 {
		return "", nil
	}
	return Output("SessionStart", text), nil
}

// maxGlobal bounds how many global notes are considered at SessionStart;
// the character budget admits far fewer.
const maxGlobal = 200

func selectInject(ctx context.Context, s *anamnesis.Store, project string, k int) ([]index.Hit, int, error) {
	ix := s.Index()
	global, err := ix.List(ctx, index.Filter{Project: note.DefaultProject, Live: true, Limit: maxGlobal})
	if err != nil {
		return nil, 0, err
	}
	total, err := ix.Count(ctx, index.Filter{Project: note.DefaultProject, Live: true})
	if err != nil {
		return nil, 0, err
	}
	sel := append([]index.Hit{}, global...)
	if project == note.DefaultProject {
		return sel, total, nil
	}
	n, err := ix.Count(ctx, index.Filter{Project: project, Live: true})
	if err != nil {
		return nil, 0, err
	}
	total += n
	durable, err := ix.List(ctx, index.Filter{Project: project, Types: []string{note.TypeProcedural, note.TypeSemantic}, Live: true, Limit: 2 * k})
	if err != nil {
		return nil, 0, err
	}
	// List is newest first; among equal times, higher confidence first.
	stableSortBy(durable, func(a, b index.Hit) bool { return a.UpdatedAt == b.UpdatedAt && a.Confidence > b.Confidence })
	recent, err := ix.List(ctx, index.Filter{Project: project, Type: note.TypeEpisodic, Live: true, Limit: 20})
	if err != nil {
		return nil, 0, err
	}
	var episodic []index.Hit
	for _, h := range recent {
		if len(episodic) < maxEpisodic && !contains(h.Tags, "reflected") {
			episodic = append(episodic, h)
		}
	}
	reserve := min(len(episodic), k)
	if m := k - reserve; m < len(durable) {
		durable = durable[:m]
	}
	sel = append(sel, durable...)
	sel = append(sel, episodic[:reserve]...)
	return sel, total, nil
}

func stableSortBy(hs []index.Hit, before func(a, b index.Hit) bool) {
	for i := 1; i < len(hs); i++ {
		for j := i; j > 0 && before(hs[j], hs[j-1]); j-- {
			hs[j], hs[j-1] = hs[j-1], hs[j]
		}
	}
}

// renderNotes writes whole notes in order while they fit in budget
// characters, skipping any that would not fit.
func renderNotes(notes []index.Hit, budget int) (string, []string) {
	var b strings.Builder
	var ids []string
	for _, h := range notes {
		part := renderNote(h)
		if b.Len()+len(part) > budget {
			continue
		}
		b.WriteString(part)
		ids = append(ids, h.ID)
	}
	return b.String(), ids
}

// renderNote shows control characters escaped (note.Escape): notes come
// from machines that may not refuse them, and Claude Code can print what
// a hook injects.
func renderNote(h index.Hit) string {
	meta := fmt.Sprintf("_project: %s | origin: %s | updated: %s | id: %s", note.Escape(h.Project), note.Escape(h.MachineID), dateOf(h.UpdatedAt), h.ID)
	if h.ProvSource != note.DefaultProvSource || h.Confidence < 1.0 {
		meta += fmt.Sprintf(" | source: %s (confidence %s)", h.ProvSource, strconv.FormatFloat(h.Confidence, 'g', -1, 64))
	}
	if v, ok := conflictOf(h); ok {
		meta += " | conflict copy of " + v
	}
	out := fmt.Sprintf("\n## [%s] %s\n%s_\n", h.Type, note.Escape(h.Title), meta)
	if body := strings.TrimSpace(h.Body); body != "" {
		out += "\n" + note.EscapeText(body) + "\n"
	}
	return out
}

func conflictOf(h index.Hit) (string, bool) {
	return h.ExtraValue("conflict_of")
}

func dateOf(ts string) string {
	if len(ts) >= 10 {
		return ts[:10]
	}
	return ts
}

// Prompt searches the prompt and returns the best few notes this session
// has not seen yet, above the relevance floor; "" otherwise.
func Prompt(ctx context.Context, env Env, in Input) (string, error) {
	if strings.TrimSpace(in.Prompt) == "" {
		return "", nil
	}
	words, err := env.Store.Index().DistinctiveWords(ctx, in.Prompt, DistinctiveFraction)
	if err != nil || len(words) == 0 {
		return "", err
	}
	hits, err := env.Store.Search(ctx, strings.Join(words, " "), index.Filter{Limit: PromptK * 3})
	if err != nil || len(hits) == 0 {
		return "", err
	}
	seen, err := injected(env.stateDir(), in.SessionID)
	if err != nil {
		return "", err
	}
	var fresh []index.Hit
	for _, h := range hits {
		if seen[h.ID] {
			continue
		}
		fresh = append(fresh, h)
		if len(fresh) == PromptK {
			break
		}
	}
	if len(fresh) == 0 {
		return "", nil
	}
	head := "<anamnesis-memory source=\"prompt\">\nNotes from anamnesis memory that match this prompt:\n"
	body, ids := renderNotes(fresh, PromptBudget-len(head))
	if len(ids) == 0 {
		return "", nil
	}
	if in.SessionID != "" {
		if err := rememberInjected(env.stateDir(), in.SessionID, ids); err != nil {
			return "", err
		}
	}
	return Output("UserPromptSubmit", head+body+"</anamnesis-memory>"), nil
}

// CaptureResult says what a capture did.
type CaptureResult struct {
	ID, Path string
	Updated  bool   // an earlier capture of this session was updated
	Skipped  string // why nothing was written
}

// Capture turns the session transcript into one episodic note (redacted),
// or updates the note an earlier capture of the same session wrote (a
// PreCompact followed by SessionEnd), and commits it.
func Capture(ctx context.Context, env Env, in Input, source string) (CaptureResult, error) {
	if in.TranscriptPath == "" {
		return CaptureResult{Skipped: "no transcript_path in the hook input"}, nil
	}
	sess, err := ParseTranscript(in.TranscriptPath)
	if err != nil {
		return CaptureResult{}, err
	}
	if sess.SessionID == "" {
		sess.SessionID = in.SessionID
	}
	cwd := sess.Cwd
	if cwd == "" {
		cwd = in.Cwd
	}
	if IsTrivial(sess) {
		return CaptureResult{Skipped: "trivial session"}, nil
	}
	// Redact the raw texts before the summary clips them: a clipped secret
	// no longer has the shape the patterns recognise.
	sess.FirstPrompt, sess.LastOutcome = Redact(sess.FirstPrompt), Redact(sess.LastOutcome)
	for i, f := range sess.FilesTouched {
		sess.FilesTouched[i] = Redact(f)
	}
	title, body := Summarize(sess)
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
	tags := []string{"session", source}
	if sess.SessionID != "" {
		if id, err := env.Store.Index().FindSession(ctx, sess.SessionID); err != nil {
			return CaptureResult{}, err
		} else if id != "" {
			prev, _, err := env.Store.Get(ctx, id)
			if err == nil {
				prev.Title, prev.Body, prev.Project = title, body, project
				for _, t := range tags {
					if !contains(prev.Tags, t) {
						prev.Tags = append(prev.Tags, t)
					}
				}
				path, err := env.Store.Update(ctx, prev)
				if err != nil {
					return CaptureResult{}, err
				}
				return CaptureResult{ID: id, Path: path, Updated: true}, nil
			}
		}
	}
	n, path, err := env.Store.Write(ctx, anamnesis.WriteRequest{
		Type: note.TypeEpisodic, Title: title, Body: body, Project: project, Tags: tags,
		ProvSource: "session-end", ProvSession: sess.SessionID,
	})
	if err != nil {
		return CaptureResult{}, err
	}
	return CaptureResult{ID: n.ID, Path: path}, nil
}

// sessionFile keeps per-session state outside memory/ (it is machine
// local); the session id is hashed so it can never name a path.
func sessionFile(dir, session string) string {
	sum := sha256.Sum256([]byte(session))
	return filepath.Join(dir, "sessions", hex.EncodeToString(sum[:12])+".json")
}

type sessionState struct {
	Injected []string `json:"injected"`
}

func injected(dir, session string) (map[string]bool, error) {
	out := map[string]bool{}
	if session == "" {
		return out, nil
	}
	data, err := os.ReadFile(sessionFile(dir, session))
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read session state: %w", err)
	}
	var st sessionState
	if json.Unmarshal(data, &st) != nil {
		return out, nil // a damaged state file only means notes may repeat
	}
	for _, id := range st.Injected {
		out[id] = true
	}
	return out, nil
}

func rememberInjected(dir, session string, ids []string) error {
	seen, err := injected(dir, session)
	if err != nil {
		return err
	}
	st := sessionState{}
	for id := range seen {
		st.Injected = append(st.Injected, id)
	}
	for _, id := range ids {
		if !seen[id] {
			st.Injected = append(st.Injected, id)
		}
	}
	data, _ := json.Marshal(st)
	if err := privateDir(dir); err != nil {
		return err
	}
	// A cache of what this session was shown: losing it in a crash only
	// means a note may be shown twice, so no fsync on the hook's path.
	if err := note.ReplaceFile(sessionFile(dir, session), data); err != nil {
		return fmt.Errorf("write session state: %w", err)
	}
	pruneState(filepath.Join(dir, "sessions"))
	return nil
}

// pruneState removes session state of sessions long over; best effort.
func pruneState(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) < 64 {
		return
	}
	cutoff := time.Now().Add(-stateTTL)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// SpawnSync starts `anamnesis sync` detached (own session, no stdio
// attached to the hook), so the hook returns at once and Claude Code
// never waits for the network. Its report is appended to
// <home>/state/sync.log (see LogEnv).
func SpawnSync(binary, storeHome string) error {
	return spawn(binary, storeHome, "sync")
}

// SpawnReindex starts `anamnesis reindex` detached, for a hook that found
// the index needing a rebuild (opening the store rebuilds it). Its report
// is appended to <home>/state/reindex.log.
func SpawnReindex(binary, storeHome string) error {
	return spawn(binary, storeHome, "reindex")
}

// spawn starts `anamnesis COMMAND` detached. The command writes its own
// report to the log through LogEnv, in one block when it ends; the log is
// also its stdout and stderr, opened for appending (never truncated:
// several hooks start syncs at once), so that whatever the runtime itself
// prints (a crash) is kept too.
func spawn(binary, storeHome, command string) error {
	dir, err := stateDir(storeHome)
	if err != nil {
		return err
	}
	logPath := filepath.Join(dir, command+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	if err := logf.Chmod(0o600); err != nil { // an older version made it 0644
		return fmt.Errorf("make %s private: %w", logPath, err)
	}
	cmd := exec.Command(binary, "--home", storeHome, command)
	cmd.Env = append(os.Environ(), LogEnv+"="+logPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start background %s: %w", command, err)
	}
	return cmd.Process.Release()
}
