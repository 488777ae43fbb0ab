package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// FreshFigures are the loop's cases of memory staying current (issue
// 25), each measured on fresh machines and a fresh hub.
type FreshFigures struct {
	// Machine switch: a note superseded and a note edited on the desk;
	// the laptop's next session. Of the two facts: the current version
	// injected at session start, the stale version injected at session
	// start, the current version delivered by the first prompt, and
	// arrivals saying what they replace or edit.
	SwitchCurrentAtStart, SwitchStaleAtStart, SwitchCurrentByPrompt, SwitchRemarked int
	SwitchStartWall                                                                 time.Duration
	// Open session: when a note written and pushed on the desk reached a
	// prompt of a session open on the laptop (0: not within OpenWait),
	// prompts coming every OpenEvery.
	OpenReached         time.Duration
	OpenEvery, OpenWait time.Duration
	OpenThrottle        string
	// Contradiction written without supersedes: memory_write's answer
	// names the old note; SessionStart marks the pair.
	ContradictionOffered, ContradictionMarked bool
	// 60 durable + 10 global notes at SessionStart: shown whole, named
	// by title, not named.
	BigProjectWhole, BigProjectListed, BigProjectUnnamed int
	BigGlobalWhole, BigGlobalListed, BigGlobalUnnamed    int
	BigChars                                             int
	// Plugin route: episodic notes left by a session that wrote a durable
	// note through the plugin's memory_write (0 wanted).
	PluginEchoes int
}

// runFresh plays the issue-25 cases under root.
func runFresh(ctx context.Context, cfg LoopConfig, root string) (FreshFigures, error) {
	var f FreshFigures
	for _, step := range []func(context.Context, LoopConfig, string, *FreshFigures) error{
		freshSwitch, freshOpenSession, freshContradiction, freshBigProject, freshPlugin,
	} {
		if err := step(ctx, cfg, root, &f); err != nil {
			return f, err
		}
	}
	return f, nil
}

// freshPair makes a hub and two machines that use it in their hooks too,
// and a project directory "widget" for the hooks' cwd.
func freshPair(ctx context.Context, cfg LoopConfig, root, name string, laptopEnv ...string) (desk, laptop *loopMachine, cwd string, err error) {
	dir := filepath.Join(root, name)
	hub := filepath.Join(dir, "hub.git")
	if b, err := exec.CommandContext(ctx, "git", "init", "--bare", "-b", "main", hub).CombinedOutput(); err != nil {
		return nil, nil, "", fmt.Errorf("git init: %v: %s", err, b)
	}
	desk, laptop = newLoopMachine(cfg, dir, "desk", hub), newLoopMachine(cfg, dir, "laptop", hub)
	desk.alwaysRemote, laptop.alwaysRemote = true, true
	laptop.extra = laptopEnv
	cwd = filepath.Join(dir, "src", "widget")
	os.MkdirAll(filepath.Join(cwd, ".anamnesis"), 0o755)
	if err := os.WriteFile(filepath.Join(cwd, ".anamnesis", "project"), []byte("widget\n"), 0o644); err != nil {
		return nil, nil, "", err
	}
	for _, m := range []*loopMachine{desk, laptop} {
		if _, err := m.run(ctx, "", "write", "--type", "semantic", "--title", "warm-up", "--body", "creates the store", "--scope", "machine-local"); err != nil {
			return nil, nil, "", err
		}
	}
	return desk, laptop, cwd, nil
}

func (m *loopMachine) write(ctx context.Context, title, body string, extra ...string) (string, error) {
	out, err := m.run(ctx, "", append([]string{"write", "--type", "semantic", "--project", "widget", "--title", title, "--body", body}, extra...)...)
	return strings.TrimSpace(out), err
}

// settle waits until no process runs on m's home (a detached sync).
func (m *loopMachine) settle(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		busy := false
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err == nil && strings.Contains(string(b), m.home) {
				busy = true
				break
			}
		}
		if !busy {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freshSwitch(ctx context.Context, cfg LoopConfig, root string, f *FreshFigures) error {
	desk, laptop, cwd, err := freshPair(ctx, cfg, root, "switch")
	if err != nil {
		return err
	}
	fly, err := desk.write(ctx, "Widget deploys with Fly.io", "Deploy with fly deploy from main.")
	if err != nil {
		return err
	}
	region, err := desk.write(ctx, "Widget staging region", "Staging runs in eu-west-3.")
	if err != nil {
		return err
	}
	for _, m := range []*loopMachine{desk, laptop} {
		if _, err := m.run(ctx, "", "sync"); err != nil {
			return err
		}
	}
	// On the desk, minutes before the switch: one fact replaced, one edited.
	if _, err := desk.write(ctx, "Widget deploys with Render", "Deploy with render deploy from main.", "--supersedes", fly); err != nil {
		return err
	}
	var shown struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal([]byte(mustRun(ctx, desk, "show", "--json", region)), &shown); err != nil || shown.Path == "" {
		return fmt.Errorf("show %s: %v", region, err)
	}
	// An edit by hand (or by a tool), committed by the next sync.
	p := filepath.Join(desk.home, shown.Path)
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "eu-west-3", "eu-central-1", 1)), 0o644); err != nil {
		return err
	}
	if _, err := desk.run(ctx, "", "sync"); err != nil {
		return err
	}
	start := time.Now()
	at, err := laptop.hook(ctx, "session-start", map[string]any{"session_id": "switch", "cwd": cwd, "source": "startup"})
	f.SwitchStartWall = time.Since(start)
	if err != nil {
		return err
	}
	laptop.settle(30 * time.Second) // the user reads, then types
	pr, err := laptop.hook(ctx, "prompt", map[string]any{"session_id": "switch", "cwd": cwd, "prompt": "ok, let's start"})
	if err != nil {
		return err
	}
	for _, c := range []struct{ current, stale string }{{"render deploy", "fly deploy"}, {"eu-central-1", "eu-west-3"}} {
		if strings.Contains(at, c.current) {
			f.SwitchCurrentAtStart++
		}
		if strings.Contains(at, c.stale) {
			f.SwitchStaleAtStart++
		}
		if strings.Contains(at, c.current) || strings.Contains(pr, c.current) {
			f.SwitchCurrentByPrompt++
		}
	}
	f.SwitchRemarked = strings.Count(pr, "shown at session start")
	return nil
}

func mustRun(ctx context.Context, m *loopMachine, args ...string) string {
	out, _ := m.run(ctx, "", args...)
	return out
}

func freshOpenSession(ctx context.Context, cfg LoopConfig, root string, f *FreshFigures) error {
	// The bench shortens the prompt hook's throttle (20 s by default) so
	// that it runs in seconds; the figure scales with it.
	const throttle = "2"
	f.OpenThrottle, f.OpenEvery, f.OpenWait = throttle+" s", 500*time.Millisecond, 15*time.Second
	desk, laptop, cwd, err := freshPair(ctx, cfg, root, "open", "ANAMNESIS_PROMPT_SYNC_SECONDS="+throttle)
	if err != nil {
		return err
	}
	for _, m := range []*loopMachine{desk, laptop} {
		if _, err := m.run(ctx, "", "sync"); err != nil {
			return err
		}
	}
	if _, err := laptop.hook(ctx, "session-start", map[string]any{"session_id": "open", "cwd": cwd, "source": "startup"}); err != nil {
		return err
	}
	laptop.settle(30 * time.Second)
	if _, err := desk.write(ctx, "Widget feature flag walrus", "The walrus flag is on in staging."); err != nil {
		return err
	}
	if _, err := desk.run(ctx, "", "sync"); err != nil {
		return err
	}
	pushed := time.Now()
	for time.Since(pushed) < f.OpenWait {
		pr, err := laptop.hook(ctx, "prompt", map[string]any{"session_id": "open", "cwd": cwd, "prompt": "next step"})
		if err != nil {
			return err
		}
		if strings.Contains(pr, "walrus flag is on") {
			f.OpenReached = time.Since(pushed)
			break
		}
		time.Sleep(f.OpenEvery)
	}
	laptop.settle(30 * time.Second)
	return nil
}

func freshContradiction(ctx context.Context, cfg LoopConfig, root string, f *FreshFigures) error {
	desk, _, cwd, err := freshPair(ctx, cfg, root, "contradiction")
	if err != nil {
		return err
	}
	answers, err := desk.mcpCalls(ctx, []map[string]any{
		{"type": "semantic", "project": "widget", "title": "Widget deploys with Fly.io", "body": "fly deploy from main"},
		{"type": "semantic", "project": "widget", "title": "Widget deploys with Render", "body": "deploys moved to Render"},
	})
	if err != nil {
		return err
	}
	var first, second struct {
		ID      string `json:"id"`
		Similar []struct {
			ID string `json:"id"`
		} `json:"similar"`
	}
	json.Unmarshal([]byte(answers[0]), &first)
	json.Unmarshal([]byte(answers[1]), &second)
	for _, s := range second.Similar {
		f.ContradictionOffered = f.ContradictionOffered || (s.ID == first.ID && first.ID != "")
	}
	at, err := desk.hook(ctx, "session-start", map[string]any{"session_id": "c", "cwd": cwd, "source": "startup"})
	if err != nil {
		return err
	}
	f.ContradictionMarked = first.ID != "" && strings.Contains(at, "version of the same fact as "+first.ID)
	desk.settle(30 * time.Second)
	return nil
}

func freshBigProject(ctx context.Context, cfg LoopConfig, root string, f *FreshFigures) error {
	desk, _, cwd, err := freshPair(ctx, cfg, root, "big")
	if err != nil {
		return err
	}
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber birch cedar dune")
	var writes []map[string]any
	var titles, globals []string
	for i := 0; i < 10; i++ {
		t := "The user prefers " + words[i] + " " + words[i+10]
		globals = append(globals, t)
		writes = append(writes, map[string]any{"type": "semantic", "title": t, "body": fmt.Sprintf("Preference %d, kept for every project.", i)})
	}
	for i := 0; i < 60; i++ {
		t := fmt.Sprintf("The %s %s setting of the widget build", words[i%30], words[(i*7+3)%30])
		titles = append(titles, t)
		writes = append(writes, map[string]any{"type": "semantic", "project": "widget", "title": t,
			"body": strings.Repeat(fmt.Sprintf("Fact %d: how this part of the widget build is set up and why. ", i), 4)})
	}
	if _, err := desk.mcpCalls(ctx, writes); err != nil {
		return err
	}
	at, err := desk.hook(ctx, "session-start", map[string]any{"session_id": "big", "cwd": cwd, "source": "startup"})
	if err != nil {
		return err
	}
	f.BigChars = len(at)
	count := func(ts []string) (whole, listed, none int) {
		for _, t := range ts {
			switch {
			case strings.Contains(at, "] "+t+"\n"):
				whole++
			case strings.Contains(at, " "+t+" (id "), strings.Contains(at, ": "+t+" (id "):
				listed++
			default:
				none++
			}
		}
		return
	}
	f.BigProjectWhole, f.BigProjectListed, f.BigProjectUnnamed = count(titles)
	f.BigGlobalWhole, f.BigGlobalListed, f.BigGlobalUnnamed = count(globals)
	desk.settle(30 * time.Second)
	return nil
}

func freshPlugin(ctx context.Context, cfg LoopConfig, root string, f *FreshFigures) error {
	desk, _, cwd, err := freshPair(ctx, cfg, root, "plugin")
	if err != nil {
		return err
	}
	tr, err := writeTranscript(filepath.Join(root, "plugin"), "plugin-session", cwd, "Remember that widget deploys go through the blue-green switch", []turn{
		{tool: "mcp__plugin_anamnesis_anamnesis__memory_write"},
		{text: "Saved: we decided that widget deploys always go through the blue-green switch."},
	})
	if err != nil {
		return err
	}
	if _, err := desk.hook(ctx, "session-end", map[string]any{"session_id": "plugin-session", "cwd": cwd, "transcript_path": tr}); err != nil {
		return err
	}
	desk.settle(30 * time.Second)
	list, err := desk.run(ctx, "", "list", "--type", "episodic", "--json")
	if err != nil {
		return err
	}
	f.PluginEchoes = strings.Count(list, `"id":`)
	return nil
}
