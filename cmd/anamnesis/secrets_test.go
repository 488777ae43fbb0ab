package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/httphub"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// startHTTPHub serves one bare repository through git http-backend on
// loopback, with basic auth for user and password; it returns the
// repository URL without credentials.
func startHTTPHub(t *testing.T, user, password string) (*httphub.Hub, string) {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skip("git not installed")
	}
	if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")); err != nil {
		t.Skip("git http-backend not installed")
	}
	h, err := httphub.Start(t.TempDir(), user, password)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	url, err := h.NewRepo("hub.git")
	if err != nil {
		t.Fatal(err)
	}
	return h, url
}

// userEnv is the environment of a user whose home directory is userHome,
// with no git configuration, netrc or remote but what the test gives.
func userEnv(userHome, machine string, extra ...string) []string {
	var env []string
	for _, e := range os.Environ() {
		k, _, _ := strings.Cut(e, "=")
		switch {
		case k == "HOME", k == "XDG_CONFIG_HOME", k == "NETRC", k == "CLAUDE_CONFIG_DIR", k == "PATH",
			strings.HasPrefix(k, "GIT_"), strings.HasPrefix(k, "ANAMNESIS_"):
			continue
		}
		env = append(env, e)
	}
	env = append(env, "HOME="+userHome, "XDG_CONFIG_HOME="+filepath.Join(userHome, ".config"), "PATH=/usr/bin:/bin",
		"GIT_CONFIG_NOSYSTEM=1", "ANAMNESIS_MACHINE_ID="+machine)
	return append(env, extra...)
}

// noSecret fails if secret is in what a command printed or in any file
// under dir.
func noSecret(t *testing.T, secret, what, text string) {
	t.Helper()
	if strings.Contains(text, secret) {
		t.Errorf("%s shows the secret:\n%s", what, text)
	}
}

func noSecretInFiles(t *testing.T, secret, dir string) {
	t.Helper()
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), secret) {
				t.Errorf("%s holds the secret", p)
			}
		}
		return nil
	})
}

// TestTokenInRemoteNeverShown is point 2 of issue 12: a token written in
// an http remote URL (config.json, where `init --remote` puts it) reaches
// the hub, a real git http-backend checking basic auth, and nothing else:
// not status, doctor or sync (text and --json), not MCP memory_status or
// memory_sync, not the background sync's log, not memory/.git. A wrong
// token is one line, redacted, without the hub's HTML page. config.json
// and the log are 0600; a .git/config an older version wrote with the
// token in it is cleaned by the next sync.
func TestTokenInRemoteNeverShown(t *testing.T) {
	parallel(t)
	const token = "tok-4e1f0aa9c3"
	_, url := startHTTPHub(t, "memory", token)
	remote := httphub.WithCredentials(url, "memory", token)
	shown := strings.Replace(url, "://", "://memory:***@", 1)
	uh := t.TempDir()
	home := filepath.Join(uh, ".anamnesis")
	awaitDetached(t, home)
	env := userEnv(uh, "desk")
	run := func(stdin string, args ...string) result {
		t.Helper()
		r := runCmd(t, env, stdin, args...)
		noSecret(t, token, strings.Join(args, " "), r.stdout+r.stderr)
		return r
	}

	r := mustOK(t, run("", "init", "--yes", "--remote", remote, "--no-claude", "--no-mcp"))
	if !strings.Contains(r.stdout, shown) || !strings.Contains(r.stdout, "pushed=") {
		t.Errorf("init: %s", r.stdout)
	}
	if fi, err := os.Stat(filepath.Join(home, "config.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config.json: %v %v", fi.Mode().Perm(), err)
	}
	mustOK(t, run("", "write", "--type", "semantic", "--title", "heron", "--body", "deploys on Tuesdays"))
	for _, args := range [][]string{{"sync"}, {"sync", "--json"}, {"status"}, {"status", "--json"}, {"doctor"}, {"doctor", "--json"}} {
		r := run("", args...)
		if !strings.Contains(r.stdout, shown) {
			t.Errorf("%v does not name the remote as %s:\n%s", args, shown, r.stdout)
		}
	}
	for _, tool := range []string{"memory_status", "memory_sync"} {
		out := mcpTool(t, env, tool)
		noSecret(t, token, tool, out)
		if !strings.Contains(out, shown) {
			t.Errorf("%s: %s", tool, out)
		}
	}

	// The background sync a session start begins, and its log.
	run(`{"session_id":"s","cwd":"/tmp","source":"startup"}`, "hook", "session-start")
	waitDetached(t, home)
	log, err := os.ReadFile(filepath.Join(home, "state", "sync.log"))
	if err != nil || !strings.Contains(string(log), shown) {
		t.Errorf("sync.log: %v\n%s", err, log)
	}
	noSecret(t, token, "sync.log", string(log))
	if fi, err := os.Stat(filepath.Join(home, "state", "sync.log")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("sync.log mode %v %v", fi.Mode().Perm(), err)
	}

	// An older version stored the token in memory/.git/config.
	mem := filepath.Join(home, "memory")
	testutil.Git(t, mem, "remote", "set-url", "origin", remote)
	mustOK(t, run("", "sync"))
	noSecretInFiles(t, token, mem)
	if got := strings.TrimSpace(testutil.Git(t, mem, "remote", "get-url", "origin")); got != url {
		t.Errorf("origin is %s, want %s", got, url)
	}

	// A wrong token: one line, redacted, no HTML.
	const wrong = "tok-revoked-77aa"
	badEnv := append(env, "ANAMNESIS_GIT_REMOTE="+httphub.WithCredentials(url, "memory", wrong))
	for _, args := range [][]string{{"sync"}, {"sync", "--json"}, {"doctor"}} {
		r := runCmd(t, badEnv, "", args...)
		out := r.stdout + r.stderr
		noSecret(t, wrong, strings.Join(args, " "), out)
		if r.code != 1 || !strings.Contains(out, "authentication failed for "+shown) || strings.Contains(strings.ToLower(out), "<html") {
			t.Errorf("%v with a wrong token: exit %d\n%s", args, r.code, out)
		}
		if args[0] == "sync" && strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: not one line: %q", args, r.stderr)
		}
	}
	noSecretInFiles(t, wrong, mem)
}

// TestNetrcAndCredentialHelperFromTheCLI: nobody has to put a token in a
// URL. A plain https remote syncs with the credentials in ~/.netrc, or
// with those git's credential helper keeps (here git's "store" helper,
// configured with `git config --global credential.helper store`).
func TestNetrcAndCredentialHelperFromTheCLI(t *testing.T) {
	parallel(t)
	const token = "tok-netrc-51b2"
	hub, url := startHTTPHub(t, "memory", token)
	host := strings.TrimPrefix(hub.URL, "http://")

	netrcUser := t.TempDir()
	os.WriteFile(filepath.Join(netrcUser, ".netrc"), []byte("machine 127.0.0.1 login memory password "+token+"\n"), 0o600)
	env := userEnv(netrcUser, "desk", "ANAMNESIS_HOME="+filepath.Join(netrcUser, "store"), "ANAMNESIS_GIT_REMOTE="+url)
	os.Mkdir(filepath.Join(netrcUser, "store"), 0o700) // an empty home: the first write makes the store
	mustOK(t, runCmd(t, env, "", "write", "--type", "semantic", "--title", "from netrc", "--body", "x"))
	r := mustOK(t, runCmd(t, env, "", "sync"))
	noSecret(t, token, "sync", r.stdout+r.stderr)
	if !strings.Contains(r.stdout, "pushed=true") {
		t.Errorf("netrc sync: %s", r.stdout)
	}

	helperUser := t.TempDir()
	helperEnv := userEnv(helperUser, "laptop", "ANAMNESIS_HOME="+filepath.Join(helperUser, "store"), "ANAMNESIS_GIT_REMOTE="+url)
	os.Mkdir(filepath.Join(helperUser, "store"), 0o700) // and the first sync
	gitCmd := exec.Command("git", "config", "--global", "credential.helper", "store")
	gitCmd.Env = helperEnv
	if out, err := gitCmd.CombinedOutput(); err != nil {
		t.Fatalf("git config: %v %s", err, out)
	}
	os.WriteFile(filepath.Join(helperUser, ".git-credentials"), []byte("http://memory:"+token+"@"+host+"\n"), 0o600)
	r = mustOK(t, runCmd(t, helperEnv, "", "sync", "--json"))
	noSecret(t, token, "sync --json", r.stdout+r.stderr)
	if !strings.Contains(r.stdout, `"added": 1`) {
		t.Errorf("the helper's machine did not get the note: %s", r.stdout)
	}
	noSecretInFiles(t, token, filepath.Join(helperUser, "store"))
	noSecretInFiles(t, token, filepath.Join(netrcUser, "store"))
}
