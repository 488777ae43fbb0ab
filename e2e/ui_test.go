//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// artifactsDir is where the UI test leaves its screenshots
// ($ANAMNESIS_ARTIFACTS/ui, else e2e/artifacts/ui, which git ignores).
func artifactsDir(t *testing.T) string {
	dir := filepath.Join(repoRoot(), "e2e", "artifacts", "ui")
	if d := os.Getenv("ANAMNESIS_ARTIFACTS"); d != "" {
		dir = filepath.Join(d, "ui")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startUI runs `anamnesis ui --json` for u and returns the URL it
// printed; the process is stopped when the test ends.
func startUI(t *testing.T, u *user) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, u.bin, "ui", "--json")
	cmd.Env, cmd.Dir = u.env, u.home
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("anamnesis ui stderr:\n%s", errb.String())
		}
	})
	var printed struct {
		URL string `json:"url"`
	}
	if err := json.NewDecoder(bufio.NewReader(out)).Decode(&printed); err != nil {
		t.Fatalf("anamnesis ui --json: %v\n%s", err, errb.String())
	}
	if !strings.HasPrefix(printed.URL, "http://127.0.0.1:") || !strings.Contains(printed.URL, "token=") {
		t.Fatalf("printed URL %q", printed.URL)
	}
	return printed.URL
}

// browser starts headless Chromium with a fresh profile. The evil.test
// name resolves to 127.0.0.1 inside it, as a DNS-rebinding attacker's
// name would.
func browser(t *testing.T) context.Context {
	t.Helper()
	needDebian(t, []string{"chromium"}, "chromium")
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("host-resolver-rules", "MAP evil.test 127.0.0.1"),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// editFile changes a note file the way an editor would, outside anamnesis.
func editFile(t *testing.T, u *user, id, from, to string) {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(u.store, "memory", "*", id+".md"))
	if len(matches) != 1 {
		t.Fatalf("note file of %s: %v", id, matches)
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), from) {
		t.Fatalf("%s does not hold %q", matches[0], from)
	}
	if err := os.WriteFile(matches[0], []byte(strings.Replace(string(b), from, to, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The UI in a real browser against a real `anamnesis ui` on a store with
// two machines' notes and a conflict: the list, a search, a note, an
// edit, resolving the conflict, the fleet, and the refusals (no token, a
// foreign Host, a form without its CSRF token). Screenshots of each page
// go to artifactsDir.
func TestUIInChromium(t *testing.T) {
	desk, laptop := twoMachines(t, "--no-mcp")
	projects := []string{"github.com/acme/api", "github.com/acme/web", "global"}
	for i := 0; i < 14; i++ {
		typ := []string{"procedural", "semantic", "episodic"}[i%3]
		desk.anamnesis("write", "--type", typ, "--project", projects[i%3], "--tags", "ops,deploy",
			"--title", fmt.Sprintf("Deploy checklist step %d: verify the %s", i, []string{"migrations", "feature flags", "health checks", "rollback plan"}[i%4]),
			"--body", fmt.Sprintf("Before deploying, verify step %d.\n\n- run the smoke tests\n- watch the error rate for 10 minutes", i))
	}
	walrus := strings.TrimSpace(desk.anamnesis("write", "--type", "semantic", "--project", "github.com/acme/api", "--tags", "cache,perf",
		"--title", "Walrus cache size", "--body", "The walrus cache holds **512** entries.\n\nSee `cache/walrus.go`; raise it only with a load test.\n\n| env | size |\n| --- | --- |\n| prod | 512 |\n| staging | 128 |\n"))
	hostile := strings.TrimSpace(desk.anamnesis("write", "--type", "semantic", "--title", `<script>alert("title")</script> Hostile note`,
		"--body", "<script>document.title='pwned'</script>\n\n[click me](javascript:alert(1))"))
	desk.anamnesis("sync")
	canary := strings.TrimSpace(laptop.anamnesis("write", "--type", "procedural", "--project", "github.com/acme/web", "--title", "Canary duration",
		"--body", "The canary runs 30 minutes before the rollout continues."))
	laptop.anamnesis("write", "--type", "episodic", "--project", "github.com/acme/web", "--title", "Debugged the flaky login test",
		"--body", "The login test raced the session cookie; fixed by waiting for the redirect.")
	laptop.anamnesis("sync")
	desk.anamnesis("sync")
	// Both machines change the canary note before syncing: a conflict.
	editFile(t, desk, canary, "30 minutes", "45 minutes")
	editFile(t, laptop, canary, "30 minutes", "60 minutes")
	desk.anamnesis("sync")
	laptop.anamnesis("sync")
	if st := laptop.anamnesis("status", "--json"); !strings.Contains(st, canary) {
		t.Fatalf("no conflict on the laptop:\n%s", st)
	}

	url := startUI(t, laptop)
	base := url[:strings.Index(url, "/?token=")]
	port := base[strings.LastIndex(base, ":")+1:]
	ctx := browser(t)
	dir := artifactsDir(t)
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func() string {
		t.Helper()
		return value(t, ctx, "read the page", chromedp.Text(chromedp.CSS("body")))
	}

	// Refused without the token: 401 and no note text.
	run("open without the token", chromedp.Navigate(base+"/"))
	if s := text(); !strings.Contains(s, "401") || strings.Contains(s, "Walrus") || strings.Contains(s, "Deploy checklist") {
		t.Errorf("without the token:\n%s", s)
	}
	shot("01-refused-no-token")

	// The printed URL: the token becomes a cookie and leaves the address.
	run("open the printed URL", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("ol.notes")))
	loc := value(t, ctx, "location", chromedp.Location())
	if strings.Contains(loc, "token=") {
		t.Errorf("the token stays in the address bar: %s", loc)
	}
	s := text()
	for _, want := range []string{"Walrus cache size", "Canary duration", "Debugged the flaky login test", "conflict copy", `<script>alert("title")</script> Hostile note`} {
		if !strings.Contains(s, want) {
			t.Errorf("notes page lacks %q", want)
		}
	}
	title := value(t, ctx, "page title", chromedp.Title())
	if title == "pwned" {
		t.Error("a note's script ran")
	}
	shot("02-notes")

	// Arrow keys in a filter choose without reloading the page: it
	// applies with its button.
	value(t, ctx, "mark the page", chromedp.Evaluate[bool](`window.__stay = true`))
	run("arrow down in a filter", chromedp.Focus(chromedp.CSS(`select[name=type]`)), chromedp.KeyEvent(kb.ArrowDown), chromedp.Sleep(500*time.Millisecond))
	if stayed := value(t, ctx, "is it the same page", chromedp.Evaluate[bool](`window.__stay === true`)); !stayed {
		t.Error("ArrowDown in a filter reloaded the page")
	}
	run("apply the filter", chromedp.Click(chromedp.CSS(`.facets button[type=submit]`)))
	// The list page has a summary before and after the click: wait for
	// the new location rather than for an element both pages show.
	loc = ""
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if loc = value(t, ctx, "location", chromedp.Location()); strings.Contains(loc, "type=") {
			break
		}
	}
	if !strings.Contains(loc, "type=") {
		t.Errorf("Apply filters did not apply the type: %s", loc)
	}
	run("the filtered list", chromedp.WaitVisible(chromedp.CSS("p.summary")))
	run("back to the list", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("ol.notes")))

	// Search, with the real ranking.
	run("search", chromedp.SetValue(chromedp.CSS(`input[name=q]`), "walrus cache"),
		chromedp.Submit(chromedp.CSS(`input[name=q]`)), chromedp.WaitVisible(chromedp.CSS("p.summary")))
	s = text()
	if !strings.Contains(s, "best match") || !strings.Contains(s, "Walrus cache size") || strings.Contains(s, "Deploy checklist step") {
		t.Errorf("search results:\n%s", s)
	}
	shot("03-search")

	// A note: rendered markdown (a table), details, history.
	run("open a note", chromedp.Click(chromedp.CSS(`a.title[href="/note/`+walrus+`"]`)), chromedp.WaitVisible(chromedp.CSS("article.prose table")))
	s = text()
	if !strings.Contains(s, "History") || !strings.Contains(s, "desk") || !strings.Contains(s, "created") {
		t.Errorf("note page:\n%s", s)
	}
	shot("04-note")

	// The hostile note renders as text; its script never runs.
	run("open the hostile note", chromedp.Navigate(base+"/note/"+hostile), chromedp.WaitVisible(chromedp.CSS("article.prose")))
	title = value(t, ctx, "page title", chromedp.Title())
	links := value(t, ctx, "count javascript links", chromedp.Evaluate[int](`document.querySelectorAll('a[href^="javascript:"]').length`))
	if title == "pwned" || links != 0 || !strings.Contains(text(), `<script>alert("title")</script> Hostile note`) {
		t.Errorf("hostile note: title %q, %d javascript: links", title, links)
	}

	// Edit it from the page.
	run("edit", chromedp.Navigate(base+"/note/"+walrus), chromedp.Click(chromedp.CSS(`a[href="/note/`+walrus+`/edit"]`)),
		chromedp.WaitVisible(chromedp.CSS("textarea[name=body]")))
	run("change the body", chromedp.SetValue(chromedp.CSS("textarea[name=body]"), "The walrus cache holds **1024** entries since the load test of March.\n\nSee `cache/walrus.go`."))
	shot("05-edit")
	run("preview", chromedp.Click(chromedp.CSS(`form.editor button[name=preview]`)), chromedp.WaitVisible(chromedp.CSS("section.preview")))
	if s := value(t, ctx, "read the preview", chromedp.Text(chromedp.CSS("section.preview"))); !strings.Contains(s, "1024") || strings.Contains(s, "**") {
		t.Errorf("preview:\n%s", s)
	}
	axeCheck(t, ctx, axeSource(t), "the editor's preview")
	shot("05b-edit-preview")
	run("save", chromedp.Click(chromedp.CSS(`form.editor button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS("div.flash")))
	s = text()
	if !strings.Contains(s, "Saved and committed") || !strings.Contains(s, "1024") || !strings.Contains(s, "since the load test") {
		t.Errorf("after saving:\n%s", s)
	}
	shot("06-note-after-edit")
	if show := laptop.anamnesis("show", walrus); !strings.Contains(show, "1024") {
		t.Errorf("the edit is not in the store:\n%s", show)
	}
	if log := gitOut(t, filepath.Join(laptop.store, "memory"), "log", "-1", "--format=%ae", "--name-only"); !strings.Contains(log, walrus) || !strings.Contains(log, "anamnesis@laptop") {
		t.Errorf("the edit is not committed:\n%s", log)
	}

	// Missing CSRF token: the browser submits the form without it.
	run("edit again", chromedp.Navigate(base+"/note/"+walrus+"/edit"), chromedp.WaitVisible(chromedp.CSS("textarea[name=body]")),
		chromedp.SetValue(chromedp.CSS("textarea[name=body]"), "forged"))
	value(t, ctx, "drop the CSRF token", chromedp.Evaluate[bool](`document.querySelector('form.editor input[name=csrf]').remove(), true`))
	run("submit without it", chromedp.Click(chromedp.CSS(`form.editor button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS("body")))
	time.Sleep(300 * time.Millisecond)
	if s := text(); !strings.Contains(s, "CSRF") {
		t.Errorf("a form without its CSRF token:\n%s", s)
	}
	shot("07-refused-csrf")
	if show := laptop.anamnesis("show", walrus); strings.Contains(show, "forged") {
		t.Error("a form without its CSRF token changed the note")
	}

	// Every page at desktop and phone width, light and dark, while the
	// conflict is there: no sideways overflow on a phone, no axe-core
	// violation, a focus ring on every control, a screenshot of each.
	run("check the fleet once", chromedp.Navigate(base+"/fleet"), chromedp.WaitVisible(chromedp.CSS("table.doctor")))
	commits := strings.Fields(gitOut(t, filepath.Join(laptop.store, "memory"), "log", "--format=%H", "--", "semantic/"+walrus+".md"))
	if len(commits) < 2 {
		t.Fatalf("history of the walrus note: %v", commits)
	}
	// A consolidation proposal pending review, as `consolidate --review`
	// leaves it (state/consolidate-pending.json), with hostile text.
	sweepPages(t, ctx, base, dir, []uiPage{{"review-empty", "/review", "div.empty"}})
	pendingID := writePending(t, laptop, walrus)
	sweepPages(t, ctx, base, dir, []uiPage{
		{"notes", "/", "ol.notes"},
		{"search", "/?q=walrus+cache", "p.summary"},
		{"search-empty", "/?q=zebra+unicorn", "div.empty"},
		{"note", "/note/" + walrus, "article.prose"},
		{"note-hostile", "/note/" + hostile, "article.prose"},
		{"version", "/note/" + walrus + "/version/" + commits[len(commits)-1], "form.restore"},
		{"edit", "/note/" + walrus + "/edit", "textarea[name=body]"},
		{"new", "/new", "textarea[name=body]"},
		{"conflicts", "/conflicts", "section.conflict"},
		{"review", "/review", "section.proposal"},
		{"fleet", "/fleet", "table.doctor"},
		{"error-404", "/note/01AAAAAAAAAAAAAAAAAAAAAAAA", "div.error-box"},
	})

	// Review: the proposal beside the note it replaces; discard it.
	run("review", chromedp.Navigate(base+"/review"), chromedp.WaitVisible(chromedp.CSS("section.proposal")))
	s = text()
	if !strings.Contains(s, "Walrus cache, in one note") || !strings.Contains(s, "Walrus cache size") || !strings.Contains(s, "<script>document.title") {
		t.Errorf("review page:\n%s", s)
	}
	if title := value(t, ctx, "page title", chromedp.Title()); title == "pwned" {
		t.Error("a proposal's script ran")
	}
	shot("08a-review")
	run("discard", chromedp.Click(chromedp.CSS(`.review-actions button[value=discard]`)), chromedp.WaitVisible(chromedp.CSS("div.flash")))
	if s := text(); !strings.Contains(s, "Discarded "+pendingID) || !strings.Contains(s, "No consolidation proposals") {
		t.Errorf("after discarding:\n%s", s)
	}

	// Conflicts: both versions side by side; keep the desk's.
	run("conflicts", chromedp.Navigate(base+"/conflicts"), chromedp.WaitVisible(chromedp.CSS("section.conflict")))
	s = text()
	if !strings.Contains(s, "45 minutes") || !strings.Contains(s, "60 minutes") {
		t.Errorf("conflicts page:\n%s", s)
	}
	shot("08-conflicts")
	run("keep the copy", chromedp.Click(chromedp.CSS(`.card.copy button[value=keep]`)), chromedp.WaitVisible(chromedp.CSS("div.flash")))
	if s := text(); !strings.Contains(s, "Resolved") || !strings.Contains(s, "No conflicts") {
		t.Errorf("after resolving:\n%s", s)
	}
	shot("09-resolved")
	if show := laptop.anamnesis("show", canary); !strings.Contains(show, "45 minutes") {
		t.Errorf("kept version:\n%s", show)
	}
	if st := laptop.anamnesis("status", "--json"); regexp.MustCompile(`"conflicts": \[\s*\{`).MatchString(st) {
		t.Errorf("status still lists a conflict:\n%s", st)
	}

	// Fleet: both machines, the remote, doctor's findings once checked.
	run("fleet", chromedp.Navigate(base+"/fleet"), chromedp.WaitVisible(chromedp.CSS("table.doctor")))
	s = text()
	for _, want := range []string{"desk", "laptop", "this machine", "index integrity", "Tailnet peers"} {
		if !strings.Contains(s, want) {
			t.Errorf("fleet page lacks %q", want)
		}
	}
	shot("10-fleet")

	// A foreign Host (DNS rebinding): evil.test resolves to 127.0.0.1 here.
	run("foreign host", chromedp.Navigate("http://evil.test:"+port+"/"), chromedp.WaitVisible(chromedp.CSS("body")))
	if s := text(); !strings.Contains(s, "refused") || strings.Contains(s, "Walrus") {
		t.Errorf("foreign Host:\n%s", s)
	}
	shot("11-refused-foreign-host")
	t.Logf("screenshots in %s", dir)
}

// writePending leaves a consolidation proposal pending review in u's
// store, as `anamnesis consolidate --review` does, that would supersede
// the note source; its text is hostile. It returns the proposal's id.
func writePending(t *testing.T, u *user, source string) string {
	t.Helper()
	const id = "0a1b2c3d"
	pend := []map[string]any{{
		"id": id, "model": "fake/model", "created": time.Now().UTC().Format(time.RFC3339),
		"proposal": map[string]any{
			"kind": "synthesize", "project": "github.com/acme/api", "id": "01KAZZZZZZZZZZZZZZZZZZZZZZ", "type": "semantic",
			"title":      "Walrus cache, in one note",
			"body":       "The walrus cache holds **1024** entries.\n\n<script>document.title='pwned'</script>\n\n[click me](javascript:alert(1))",
			"supersedes": []string{source},
		},
	}}
	data, err := json.Marshal(pend)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(u.store, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(u.store, "state", "consolidate-pending.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return id
}

// value runs one action that returns something.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// axeVersion is the axe-core release the UI is checked with (npm).
const axeVersion = "4.14.1"

// axeSource installs axe-core from npm into the e2e cache once and
// returns its script.
func axeSource(t *testing.T) string {
	t.Helper()
	prefix := filepath.Join(cacheDir(), "axe-core-"+axeVersion)
	file := filepath.Join(prefix, "node_modules", "axe-core", "axe.min.js")
	if _, err := os.Stat(file); err != nil {
		if err := os.MkdirAll(prefix, 0o755); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", prefix, "axe-core@"+axeVersion).CombinedOutput()
		if err != nil {
			t.Fatalf("npm install axe-core@%s: %v\n%s", axeVersion, err, out)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// uiPage is a page the sweep visits: its path and an element that says
// it has rendered.
type uiPage struct{ name, path, ready string }

type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// axeRun runs axe-core with the WCAG 2.2 AA rule set (and the A and AA
// rules of 2.0 and 2.1 it builds on) and returns the violations.
const axeRun = `axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]}})
	.then(r => ({passes: r.passes.length, version: r.testEngine.version, violations: r.violations.map(v => ({id: v.id, impact: v.impact || "", help: v.help,
		nodes: v.nodes.slice(0, 4).map(n => n.target.join(" ") + ": " + (n.failureSummary || "").split("\n").slice(0, 3).join(" "))}))}))`

type axeResult struct {
	Passes     int            `json:"passes"`
	Version    string         `json:"version"`
	Violations []axeViolation `json:"violations"`
}

type overflow struct {
	Scroll float64  `json:"scroll"` // how much wider than the viewport the page is
	Els    []string `json:"els"`
}

// overflowing names the elements that stick out past the viewport's
// right edge, the widest first.
const overflowing = `(() => {
	const w = document.documentElement.clientWidth, out = [];
	for (const el of document.querySelectorAll("body *")) {
		const r = el.getBoundingClientRect();
		if (r.width > 0 && r.right > w + 1) {
			let inScroller = false;
			for (let p = el.parentElement; p; p = p.parentElement) {
				const ox = getComputedStyle(p).overflowX;
				if (ox === "auto" || ox === "scroll" || ox === "hidden") { inScroller = true; break; }
			}
			if (!inScroller) out.push([r.right - w, el.tagName.toLowerCase() + (el.className ? "." + String(el.className).split(" ").join(".") : "")]);
		}
	}
	out.sort((a, b) => b[0] - a[0]);
	return {scroll: document.documentElement.scrollWidth - w, els: out.slice(0, 5).map(x => Math.round(x[0]) + "px " + x[1])};
})()`

// focusRings tabs through the page and returns the controls that had no
// visible focus ring (an outline of at least 2 px) when focused.
const focusRing = `(() => {
	const el = document.activeElement;
	if (!el || el === document.body) return "";
	const cs = getComputedStyle(el);
	const ok = cs.outlineStyle !== "none" && parseFloat(cs.outlineWidth) >= 2;
	return (ok ? "ok " : "NO ") + el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + String(el.className).split(" ").join(".") : "") + " " + (el.textContent || el.name || "").trim().slice(0, 30);
})()`

// sweepPages opens every page at 1366 and 390 px wide, in light and dark
// mode: no horizontal overflow at 390 px, zero axe-core violations, a
// focus ring on every control reached by Tab (desktop, light), and a
// screenshot of each, named <page>-<width>-<scheme>.png.
func sweepPages(t *testing.T, ctx context.Context, base, dir string, pages []uiPage) {
	t.Helper()
	axe := axeSource(t)
	widths := []struct {
		name string
		w, h int64
		opts []chromedp.EmulateViewportOption
	}{
		{"1366", 1366, 900, nil},
		{"390", 390, 844, []chromedp.EmulateViewportOption{chromedp.EmulateMobile, chromedp.EmulateTouch}},
	}
	total, checks := 0, 0
	for _, w := range widths {
		for _, scheme := range []string{"light", "dark"} {
			err := chromedp.Do(ctx, chromedp.EmulateViewport(w.w, w.h, w.opts...), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
					Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
				return err
			}))
			if err != nil {
				t.Fatalf("emulate %s %s: %v", w.name, scheme, err)
			}
			for _, p := range pages {
				where := fmt.Sprintf("%s at %s px, %s", p.name, w.name, scheme)
				if err := chromedp.Do(ctx, chromedp.Navigate(base+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready))); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				if w.w < 500 {
					o := value(t, ctx, "measure overflow", chromedp.Evaluate[overflow](overflowing))
					if o.Scroll > 0 {
						t.Errorf("%s: the page is %.0f px wider than the screen; sticking out: %v", where, o.Scroll, o.Els)
					}
				}
				res := axeCheck(t, ctx, axe, where)
				checks += res.Passes
				total += len(res.Violations)
				if w.w > 500 && scheme == "light" {
					checkFocusRings(t, ctx, where)
				}
				png := value(t, ctx, "screenshot", chromedp.FullScreenshot(100)) // 100: PNG; less is JPEG
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%s-%s.png", p.name, w.name, scheme)), png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	t.Logf("axe-core %s: %d violations, %d rule passes, on %d pages × 2 widths × 2 schemes", axeVersion, total, checks, len(pages))
	if err := chromedp.Do(ctx, chromedp.EmulateReset()); err != nil {
		t.Fatal(err)
	}
}

// axeCheck runs axe-core on the page as it is and fails the test for
// each violation.
func axeCheck(t *testing.T, ctx context.Context, axe, where string) axeResult {
	t.Helper()
	value(t, ctx, "inject axe-core", chromedp.Evaluate[bool](axe+";true"))
	res := value(t, ctx, "run axe-core", chromedp.Evaluate[axeResult](axeRun, chromedp.EvalAwaitPromise))
	if res.Passes == 0 || res.Version != axeVersion {
		t.Fatalf("%s: axe-core did not run as it should: %d rules passed, version %q", where, res.Passes, res.Version)
	}
	for _, v := range res.Violations {
		t.Errorf("%s: axe %s (%s): %s\n\t%s", where, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n\t"))
	}
	return res
}

// checkFocusRings presses Tab through the page (at most 150 stops) and
// fails for each control focused without a visible ring.
func checkFocusRings(t *testing.T, ctx context.Context, where string) {
	t.Helper()
	seen := map[string]bool{}
	for i := 0; i < 150; i++ {
		if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
			t.Fatalf("%s: tab: %v", where, err)
		}
		got := value(t, ctx, "read the focus", chromedp.Evaluate[string](focusRing))
		if got == "" || seen[got] {
			if i > 0 {
				return // back to the start
			}
			continue
		}
		seen[got] = true
		if strings.HasPrefix(got, "NO ") {
			t.Errorf("%s: no visible focus ring on %s", where, got[3:])
		}
	}
}

// addCommits adds n commits to the repository in dir with git
// fast-import and checks them out: each rewrites one of files (paths
// inside dir), files[0] at every tenth, alternating machines desk and
// laptop. A store with years of history in seconds.
func addCommits(t *testing.T, dir string, files []string, n int) {
	t.Helper()
	content := map[string][]byte{}
	var st strings.Builder
	when := time.Now().Add(-time.Duration(n) * time.Second).Unix()
	for k := 0; k < n; k++ {
		rel := files[1+k%(len(files)-1)]
		if k%10 == 0 {
			rel = files[0]
		}
		c, ok := content[rel]
		if !ok {
			b, err := os.ReadFile(filepath.Join(dir, rel))
			if err != nil {
				t.Fatal(err)
			}
			c = b
		}
		c = append(append([]byte{}, c...), fmt.Sprintf("\nEdit %d.\n", k)...)
		content[rel] = c
		machine := []string{"desk", "laptop"}[k%2]
		msg := "update " + rel
		fmt.Fprintf(&st, "commit refs/heads/main\nauthor %s <anamnesis@%s> %d +0000\ncommitter %s <anamnesis@%s> %d +0000\ndata %d\n%s\n",
			machine, machine, when+int64(k), machine, machine, when+int64(k), len(msg), msg)
		if k == 0 {
			st.WriteString("from refs/heads/main^0\n")
		}
		fmt.Fprintf(&st, "M 100644 inline %s\ndata %d\n%s\n\n", rel, len(c), c)
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(st.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fast-import: %v\n%s", err, out)
	}
	gitOut(t, dir, "reset", "--quiet", "--hard", "main")
}

// A note in a store with 5,000 commits opens within the budget: under
// 50 ms of server time (the browser's time to first byte, as the server
// renders the whole page before it writes), warm and right after a new
// commit, which the version index takes in without walking the history.
func TestUINoteIn5000CommitStore(t *testing.T) {
	u := newUser(t)
	u.env = append(u.env, "ANAMNESIS_MACHINE_ID=desk")
	u.anamnesis("init", "--yes", "--local-only", "--no-mcp")
	var files []string
	var hot string
	for i := 0; i < 30; i++ {
		id := strings.TrimSpace(u.anamnesis("write", "--type", "semantic", "--title", fmt.Sprintf("Fact %d about the build", i),
			"--body", fmt.Sprintf("The build uses cache layer %d.", i)))
		if i == 0 {
			hot = id
		}
		files = append(files, "semantic/"+id+".md")
	}
	mem := filepath.Join(u.store, "memory")
	const commits = 5000
	addCommits(t, mem, files, commits)
	if n, err := strconv.Atoi(strings.TrimSpace(gitOut(t, mem, "rev-list", "--count", "HEAD"))); err != nil || n < commits {
		t.Fatalf("%d commits (%v)", n, err)
	}
	u.anamnesis("reindex")

	url := startUI(t, u)
	base := url[:strings.Index(url, "/?token=")]
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("ol.notes"))); err != nil {
		t.Fatal(err)
	}
	// The first start builds the version index in the background.
	start := time.Now()
	for {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/note/"+hot), chromedp.WaitVisible(chromedp.CSS("section.history"))); err != nil {
			t.Fatal(err)
		}
		s := value(t, ctx, "read the page", chromedp.Text(chromedp.CSS("section.history")))
		if !strings.Contains(s, "being indexed") {
			break
		}
		if time.Since(start) > 3*time.Minute {
			t.Fatalf("the history is still being indexed after %v", time.Since(start))
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("version index of %d commits built in about %v", commits, time.Since(start).Round(100*time.Millisecond))
	serverTime := func() float64 {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/note/"+hot), chromedp.WaitVisible(chromedp.CSS("section.history"))); err != nil {
			t.Fatal(err)
		}
		return value(t, ctx, "navigation timing", chromedp.Evaluate[float64](
			`(e => e.responseStart - e.requestStart)(performance.getEntriesByType("navigation")[0])`))
	}
	median := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	var warm, afterCommit []float64
	for i := 0; i < 5; i++ {
		warm = append(warm, serverTime())
	}
	for i := 0; i < 5; i++ {
		u.anamnesis("write", "--type", "episodic", "--title", fmt.Sprintf("Session %d", i), "--body", "A new commit.")
		afterCommit = append(afterCommit, serverTime())
	}
	s := value(t, ctx, "read the page", chromedp.Text(chromedp.CSS("section.history")))
	if !strings.Contains(s, "Versions 1–20 of 501, newest first.") {
		t.Errorf("history of the note edited at every tenth commit:\n%.600s", s)
	}
	t.Logf("note page at %d commits, time to first byte (ms): warm %v, right after a new commit %v", commits, warm, afterCommit)
	if m := median(warm); m > 50 {
		t.Errorf("warm: median %.1f ms, over the 50 ms budget", m)
	}
	if m := median(afterCommit); m > 50 {
		t.Errorf("after a commit: median %.1f ms, over the 50 ms budget", m)
	}
	dir := artifactsDir(t)
	for _, w := range []struct {
		name string
		w, h int64
	}{{"1366", 1366, 900}, {"390", 390, 844}} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w.w, w.h), chromedp.Navigate(base+"/note/"+hot),
			chromedp.WaitVisible(chromedp.CSS("section.history"))); err != nil {
			t.Fatal(err)
		}
		png := value(t, ctx, "screenshot", chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(dir, "note-5000-commits-"+w.name+"-light.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
