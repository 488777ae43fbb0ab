package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// LoopConfig says where the memory-in-the-loop scenario runs.
type LoopConfig struct {
	Binary string // the anamnesis binary under test (required)
	Dir    string // work directory; its loop/ subdirectory is recreated
	// HookSize is the store size for the hook timings (0 skips them).
	HookSize int
	Log      io.Writer
}

// LoopFigures are what reaches the model in the scenario of RunLoop.
type LoopFigures struct {
	Probes int
	// Hits: probes whose answer is in what reached the model (SessionStart
	// plus prompt recall).
	Hits int
	// Recalled notes the prompt hook added across probes, and how many of
	// them hold the probe's answer.
	Recalled, RecalledRelevant int
	// Delivered notes that name a probe's subject, and how many of them do
	// not hold its answer (echoes of earlier questions or sessions).
	Mentioning, Echoes int
	// CharsPerSession is the mean text injected into one probe session.
	CharsPerSession int
	// CrowdedOut counts the project's durable notes missing from a probe's
	// SessionStart; Repeated counts notes a probe session was given twice.
	CrowdedOut, Repeated int
	// SessionNotes is how many episodic notes the scripted sessions left
	// (greetings and plain questions should leave none).
	SessionNotes  int
	HookStartP50  time.Duration
	HookPromptP50 time.Duration
	// Fresh are the cases of memory staying current across machines.
	Fresh FreshFigures
}

// HitRate, Precision and EchoRate are the ratios the issue sets targets on.
func (f LoopFigures) HitRate() float64   { return ratio(f.Hits, f.Probes) }
func (f LoopFigures) Precision() float64 { return ratio(f.RecalledRelevant, f.Recalled) }
func (f LoopFigures) EchoRate() float64  { return ratio(f.Echoes, f.Mentioning) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// subjects name the facts of the scenario: distinctive words, as a user's
// service and project names are.
var subjects = []string{"heron", "walrus", "quokka", "narwhal", "okapi", "ibis", "marmot", "lynx", "tapir", "gecko",
	"puffin", "dingo", "kestrel", "manatee", "wombat", "axolotl", "pangolin", "caracal", "egret", "mongoose",
	"ocelot", "saola", "tarsier", "zorilla"}

type fact struct {
	subject, project string
	port             int
	viaMCP           bool // a durable note written through MCP; else a session did the work
}

func (f fact) answer() string { return fmt.Sprintf("port %d", f.port) }

// RunLoop plays a user's week on two machines sharing a hub, with the
// real binary: on the desk, facts written through MCP, working sessions
// (edits and decisions) captured by the hooks, greetings, plain questions
// and 30 global preferences; a sync; then on the laptop, one probe session
// per fact (SessionStart, then a question about it). It measures what
// reached the model. No model is involved: the hooks' output is what
// Claude would be given.
func RunLoop(ctx context.Context, cfg LoopConfig) (LoopFigures, error) {
	var out LoopFigures
	if cfg.Binary == "" {
		return out, fmt.Errorf("the loop scenario needs -bin")
	}
	w, err := newLoopWorld(ctx, cfg)
	if err != nil {
		return out, err
	}
	facts := loopFacts()
	if err := w.deskWeek(ctx, facts); err != nil {
		return out, err
	}
	for _, m := range []*loopMachine{w.desk, w.laptop} {
		if _, err := m.run(ctx, "", "sync"); err != nil {
			return out, err
		}
	}
	list, err := w.laptop.run(ctx, "", "list", "--type", "episodic", "--json")
	if err != nil {
		return out, err
	}
	out.SessionNotes = strings.Count(list, `"id":`)
	if err := w.probe(ctx, facts, &out); err != nil {
		return out, err
	}
	if out.Fresh, err = runFresh(ctx, cfg, filepath.Join(w.root, "fresh")); err != nil {
		return out, fmt.Errorf("fresh cases: %w", err)
	}
	if cfg.HookSize > 0 {
		if out.HookStartP50, out.HookPromptP50, err = loopHookTimes(ctx, cfg); err != nil {
			return out, err
		}
	}
	return out, nil
}

// loopWorld is the scenario's setting: a hub, two machines and two
// project directories.
type loopWorld struct {
	root         string
	desk, laptop *loopMachine
	projects     map[string]string // project name -> directory
	sessions     int
}

func newLoopWorld(ctx context.Context, cfg LoopConfig) (*loopWorld, error) {
	root, err := filepath.Abs(filepath.Join(cfg.Dir, "loop"))
	if err != nil {
		return nil, err
	}
	os.RemoveAll(root)
	hub := filepath.Join(root, "hub.git")
	if b, err := exec.CommandContext(ctx, "git", "init", "--bare", "-b", "main", hub).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git init: %v: %s", err, b)
	}
	w := &loopWorld{root: root, projects: map[string]string{},
		desk: newLoopMachine(cfg, root, "desk", hub), laptop: newLoopMachine(cfg, root, "laptop", hub)}
	for _, p := range []string{"app", "infra"} {
		dir := filepath.Join(root, "src", p)
		os.MkdirAll(filepath.Join(dir, ".anamnesis"), 0o755)
		if err := os.WriteFile(filepath.Join(dir, ".anamnesis", "project"), []byte(p+"\n"), 0o644); err != nil {
			return nil, err
		}
		w.projects[p] = dir
	}
	return w, nil
}

// loopFacts are the scenario's facts: one per subject, two of three
// written through MCP, the third learnt by a working session.
func loopFacts() []fact {
	var facts []fact
	for i, s := range subjects {
		facts = append(facts, fact{subject: s, project: []string{"app", "infra"}[i%2], port: 4100 + 7*i, viaMCP: i%3 != 2})
	}
	return facts
}

// deskWeek is the week on the desk: a store, global preferences, the
// facts through MCP, then working sessions, plain questions and
// greetings.
func (w *loopWorld) deskWeek(ctx context.Context, facts []fact) error {
	desk := w.desk
	if _, err := desk.run(ctx, "", "write", "--type", "semantic", "--title", "warm-up", "--body", "creates the store", "--scope", "machine-local"); err != nil {
		return err
	}
	for i := 0; i < 30; i++ {
		body := fmt.Sprintf("Preference %d: the user likes small commits, tabs in Go, and reviews before merging; detail %d.", i, i)
		if _, err := desk.run(ctx, "", "write", "--type", "semantic", "--title", fmt.Sprintf("User preference %d", i), "--body", strings.Repeat(body+" ", 3)); err != nil {
			return err
		}
	}
	var writes []map[string]any
	for _, f := range facts {
		if f.viaMCP {
			writes = append(writes, map[string]any{"type": "semantic", "project": f.project,
				"title": fmt.Sprintf("The %s service listens on port %d", f.subject, f.port),
				"body":  fmt.Sprintf("The %s service listens on %s; its health check is /healthz.", f.subject, f.answer())})
		}
	}
	if err := desk.mcpWrites(ctx, writes); err != nil {
		return err
	}
	for i, f := range facts {
		if err := w.deskSessions(ctx, i, f); err != nil {
			return err
		}
	}
	return nil
}

// deskSessions plays the desk's sessions about fact i: the work that
// settles it (unless MCP wrote it), every other time a question the
// session cannot answer, every fourth a greeting.
func (w *loopWorld) deskSessions(ctx context.Context, i int, f fact) error {
	if !f.viaMCP {
		cfgFile := filepath.Join(w.projects[f.project], "config", f.subject+".yaml")
		if err := w.play(ctx, w.desk, f.project, fmt.Sprintf("configure the %s service to listen on port %d", f.subject, f.port), []turn{
			{tool: "Edit", file: cfgFile},
			{text: fmt.Sprintf("Done: the %s service now listens on %s (config/%s.yaml). We decided to keep the health check on /healthz.", f.subject, f.answer(), f.subject)},
		}); err != nil {
			return err
		}
	}
	if i%2 == 0 { // a plain question, not settled here: nothing to keep
		if err := w.play(ctx, w.desk, f.project, fmt.Sprintf("what port does the %s service listen on?", f.subject),
			[]turn{{text: fmt.Sprintf("I would have to look at the %s service's configuration to say.", f.subject)}}); err != nil {
			return err
		}
	}
	if i%4 == 0 {
		return w.play(ctx, w.desk, f.project, "hello there", []turn{{text: "Hello! What would you like to work on?"}})
	}
	return nil
}

// play runs one session on m: SessionStart, one prompt, the transcript of
// turns, SessionEnd.
func (w *loopWorld) play(ctx context.Context, m *loopMachine, project, prompt string, turns []turn) error {
	w.sessions++
	id := fmt.Sprintf("%s-session-%d", m.name, w.sessions)
	cwd := w.projects[project]
	if _, err := m.hook(ctx, "session-start", map[string]any{"session_id": id, "cwd": cwd, "source": "startup"}); err != nil {
		return err
	}
	if _, err := m.hook(ctx, "prompt", map[string]any{"session_id": id, "cwd": cwd, "prompt": prompt}); err != nil {
		return err
	}
	tr, err := writeTranscript(w.root, id, cwd, prompt, turns)
	if err != nil {
		return err
	}
	_, err = m.hook(ctx, "session-end", map[string]any{"session_id": id, "cwd": cwd, "transcript_path": tr})
	return err
}

// probe runs one probe session per fact on the laptop and scores what
// reached the model.
func (w *loopWorld) probe(ctx context.Context, facts []fact, out *LoopFigures) error {
	durable := map[string][]string{} // project -> titles of its durable notes
	for _, f := range facts {
		if f.viaMCP {
			durable[f.project] = append(durable[f.project], fmt.Sprintf("The %s service listens on port %d", f.subject, f.port))
		}
	}
	chars := 0
	for i, f := range facts {
		id := fmt.Sprintf("probe-%d", i)
		cwd := w.projects[f.project]
		start, err := w.laptop.hook(ctx, "session-start", map[string]any{"session_id": id, "cwd": cwd, "source": "startup"})
		if err != nil {
			return err
		}
		prompt, err := w.laptop.hook(ctx, "prompt", map[string]any{"session_id": id, "cwd": cwd, "prompt": fmt.Sprintf("which port does the %s service use again?", f.subject)})
		if err != nil {
			return err
		}
		chars += len(start) + len(prompt)
		out.score(f, start, prompt, durable[f.project])
	}
	out.CharsPerSession = chars / max(out.Probes, 1)
	return nil
}

// score counts one probe: whether its answer arrived, which recalled
// notes were relevant, echoes, durable notes crowded out, repeats.
func (out *LoopFigures) score(f fact, start, prompt string, durable []string) {
	out.Probes++
	if strings.Contains(start, f.answer()) || strings.Contains(prompt, f.answer()) {
		out.Hits++
	}
	for _, title := range durable {
		if !strings.Contains(start, title) {
			out.CrowdedOut++
		}
	}
	startNotes, promptNotes := splitNotes(start), splitNotes(prompt)
	for _, n := range promptNotes {
		out.Recalled++
		if strings.Contains(n.text, f.answer()) {
			out.RecalledRelevant++
		}
	}
	ids := map[string]bool{}
	for _, n := range startNotes {
		ids[n.id] = true
	}
	for _, n := range append(startNotes, promptNotes...) {
		if strings.Contains(strings.ToLower(n.text), f.subject) {
			out.Mentioning++
			if !strings.Contains(n.text, f.answer()) {
				out.Echoes++
			}
		}
	}
	for _, n := range promptNotes {
		if ids[n.id] {
			out.Repeated++
		}
	}
}

// loopHookTimes are the session-start and prompt hooks' p50 on a
// generated store of cfg.HookSize notes.
func loopHookTimes(ctx context.Context, cfg LoopConfig) (start, prompt time.Duration, err error) {
	bc := Config{Dir: cfg.Dir, Binary: cfg.Binary, Log: cfg.Log}
	src, _, err := ensureStore(bc, cfg.HookSize)
	if err != nil {
		return 0, 0, err
	}
	paths, err := listPaths(filepath.Join(src, "memory"))
	if err != nil {
		return 0, 0, err
	}
	prompts, err := promptQueries(paths, 100)
	if err != nil {
		return 0, 0, err
	}
	var f Figures
	env := append(os.Environ(), "ANAMNESIS_MACHINE_ID=bench")
	if err := measureHooks(ctx, bc, src, env, prompts, &f); err != nil {
		return 0, 0, err
	}
	return f.HookStartP50, f.HookPromptP50, nil
}

// loopMachine runs the binary as one machine: its own home and machine
// id, the hub as remote only for sync (hooks then start no background
// sync, which would make the scenario racy).
type loopMachine struct {
	cfg        LoopConfig
	name, home string
	hub        string
	// alwaysRemote gives every command the hub, hooks too (the fresh
	// cases measure their syncs); extra is more environment.
	alwaysRemote bool
	extra        []string
}

func newLoopMachine(cfg LoopConfig, root, name, hub string) *loopMachine {
	home := filepath.Join(root, name)
	os.MkdirAll(home, 0o755)
	return &loopMachine{cfg: cfg, name: name, home: home, hub: hub}
}

func (m *loopMachine) env(args []string) []string {
	env := append(os.Environ(), "ANAMNESIS_HOME="+m.home, "ANAMNESIS_MACHINE_ID="+m.name)
	if m.alwaysRemote || len(args) > 0 && args[0] == "sync" {
		env = append(env, "ANAMNESIS_GIT_REMOTE="+m.hub)
	}
	return append(env, m.extra...)
}

func (m *loopMachine) run(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, m.cfg.Binary, args...)
	cmd.Env = m.env(args)
	cmd.Stdin = strings.NewReader(stdin)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: anamnesis %v: %v: %s", m.name, args, err, errb.String())
	}
	return string(out), nil
}

// hook runs `anamnesis hook NAME` and returns the context it injects.
func (m *loopMachine) hook(ctx context.Context, name string, in map[string]any) (string, error) {
	b, _ := json.Marshal(in)
	out, err := m.run(ctx, string(b), "hook", name)
	if err != nil || strings.TrimSpace(out) == "" {
		return "", err
	}
	var o struct {
		HookSpecificOutput struct {
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		return "", fmt.Errorf("hook %s printed %q: %w", name, out, err)
	}
	return o.HookSpecificOutput.AdditionalContext, nil
}

// mcpWrites calls memory_write once per note through `anamnesis mcp`.
func (m *loopMachine) mcpWrites(ctx context.Context, notes []map[string]any) error {
	_, err := m.mcpCalls(ctx, notes)
	return err
}

// mcpCalls is mcpWrites returning each call's text answer.
func (m *loopMachine) mcpCalls(ctx context.Context, notes []map[string]any) ([]string, error) {
	var answers []string
	cmd := exec.CommandContext(ctx, m.cfg.Binary, "mcp")
	cmd.Env = m.env(nil)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer cmd.Wait()
	defer stdin.Close()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	send := func(v map[string]any) {
		b, _ := json.Marshal(v)
		stdin.Write(append(b, '\n'))
	}
	await := func(id int) error {
		for lines.Scan() {
			var r struct {
				ID     *int            `json:"id"`
				Error  json.RawMessage `json:"error"`
				Result struct {
					IsError bool `json:"isError"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"result"`
			}
			if json.Unmarshal(lines.Bytes(), &r) != nil || r.ID == nil || *r.ID != id {
				continue
			}
			if len(r.Error) > 0 || r.Result.IsError {
				return fmt.Errorf("mcp call %d failed: %s", id, lines.Text())
			}
			if id > 0 && len(r.Result.Content) > 0 {
				answers = append(answers, r.Result.Content[0].Text)
			} else if id > 0 {
				answers = append(answers, "")
			}
			return nil
		}
		return fmt.Errorf("mcp server ended: %s", errb.String())
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "bench", "version": "0"}}})
	if err := await(0); err != nil {
		return nil, err
	}
	send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	for i, n := range notes {
		send(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": map[string]any{"name": "memory_write", "arguments": n}})
		if err := await(i + 1); err != nil {
			return nil, err
		}
	}
	return answers, nil
}

// turn is one assistant turn of a scripted session: text or a tool use.
type turn struct {
	text, tool, file string
}

// writeTranscript writes a Claude Code transcript of one session.
func writeTranscript(root, session, cwd, prompt string, turns []turn) (string, error) {
	var b strings.Builder
	line := func(v map[string]any) {
		j, _ := json.Marshal(v)
		b.Write(append(j, '\n'))
	}
	line(map[string]any{"type": "user", "uuid": session + "-u", "sessionId": session, "cwd": cwd, "gitBranch": "main",
		"message": map[string]any{"role": "user", "content": prompt}})
	for i, t := range turns {
		var content []map[string]any
		if t.tool != "" {
			content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", i), "name": t.tool,
				"input": map[string]any{"file_path": t.file, "old_string": "a", "new_string": "b"}})
		} else {
			content = append(content, map[string]any{"type": "text", "text": t.text})
		}
		line(map[string]any{"type": "assistant", "uuid": fmt.Sprintf("%s-a%d", session, i), "sessionId": session,
			"message": map[string]any{"role": "assistant", "content": content}})
	}
	p := filepath.Join(root, "transcripts", session+".jsonl")
	os.MkdirAll(filepath.Dir(p), 0o755)
	return p, os.WriteFile(p, []byte(b.String()), 0o644)
}

type injectedNote struct{ id, text string }

// splitNotes cuts an injected context into its notes ("## [type] title",
// a metadata line with "id: ...", the body).
func splitNotes(ctx string) []injectedNote {
	var out []injectedNote
	parts := strings.Split(ctx, "\n## [")
	for _, p := range parts[1:] {
		n := injectedNote{text: p}
		if i := strings.Index(p, "| id: "); i >= 0 {
			id := p[i+len("| id: "):]
			if j := strings.IndexAny(id, " |_\n"); j >= 0 {
				id = id[:j]
			}
			n.id = id
		}
		out = append(out, n)
	}
	return out
}
