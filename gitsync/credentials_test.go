package gitsync

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/httphub"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:tok3n@host.example/a/b.git":  "https://user:***@host.example/a/b.git",
		"https://ghp_tokenonly@github.com/u/r":     "https://***@github.com/u/r",
		"http://u:p%40ss@127.0.0.1:8080/x":         "http://u:***@127.0.0.1:8080/x",
		"https://host.example/a/b.git":             "https://host.example/a/b.git",
		"ssh://git@host.example/x.git":             "ssh://git@host.example/x.git",
		"ssh://git:pw@host.example/x.git":          "ssh://git:***@host.example/x.git",
		"git@github.com:u/r.git":                   "git@github.com:u/r.git",
		"/srv/hub.git":                             "/srv/hub.git",
		"https://host.example/path@v2":             "https://host.example/path@v2",
		"https://u:p@ss@host.example/x":            "https://u:***@host.example/x",
		"peers:http://a:pw1@h1:7,https://b:pw2@h2": "peers:http://a:***@h1:7,https://b:***@h2",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	msg := `Get "https://me:hunter22@h.example/r/info/refs?service=git-upload-pack": dial tcp: refused; hunter22`
	if got := redactText(msg, "hunter22"); strings.Contains(got, "hunter22") || !strings.Contains(got, "https://me:***@h.example/r") {
		t.Errorf("redactText: %q", got)
	}
}

func TestParseNetrc(t *testing.T) {
	text := `default login anon password anonpw
machine other.example login o password op
# not a comment in netrc, but harmless
machine h.example
  login alice
  password "with space\"quote"
macdef init
cd /pub

machine h.example login bob password bobpw
`
	got := parseNetrc(text)
	want := []netrcEntry{{"other.example", "o", "op"}, {"h.example", "alice", `with space"quote`}, {"h.example", "bob", "bobpw"}, {"", "anon", "anonpw"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	p := filepath.Join(t.TempDir(), "netrc")
	os.WriteFile(p, []byte(text), 0o600)
	t.Setenv("NETRC", p)
	for _, c := range []struct{ host, user, login, pass string }{
		{"H.example", "", "alice", `with space"quote`},
		{"h.example", "bob", "bob", "bobpw"},
		{"unknown.example", "", "anon", "anonpw"},
	} {
		if l, pw, _, ok := netrcLookup(c.host, c.user); !ok || l != c.login || pw != c.pass {
			t.Errorf("%s/%s: %q %q %v", c.host, c.user, l, pw, ok)
		}
	}
}

// credHome gives the test a HOME of its own, with no git configuration
// but what the test writes, so the user's own helpers and ~/.netrc
// stay out of it.
func credHome(t *testing.T) string {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
	t.Setenv("NETRC", "")
	return home
}

func startHub(t *testing.T, user, pass string) (*httphub.Hub, string) {
	t.Helper()
	if out, err := exec.Command("git", "--exec-path").Output(); err != nil {
		t.Skip("git not installed")
	} else if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")); err != nil {
		t.Skip("git http-backend not installed")
	}
	h, err := httphub.Start(t.TempDir(), user, pass)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(h.Close)
	url, err := h.NewRepo("hub.git")
	if err != nil {
		t.Fatal(err)
	}
	return h, url
}

// noSecretIn fails if secret appears in any file under dir.
func noSecretIn(t *testing.T, dir, secret string) {
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

// TestCredentialsStayWhereTheUserPutThem: a token in the remote URL
// reaches the hub (a real git http-backend checking basic auth) but not
// .git/config, the report or any file of the repository; a config an
// older version wrote with the token in it is cleaned by the next sync.
func TestCredentialsStayWhereTheUserPutThem(t *testing.T) {
	credHome(t)
	_, url := startHub(t, "memory", "tok-3f9a1c")
	remote := httphub.WithCredentials(url, "memory", "tok-3f9a1c")
	a := newMachine(t, "a", remote)
	a.write(mkNote(a, "over http", "x"))
	rep := a.sync()
	if !rep.Pushed || strings.Contains(rep.Remote, "tok-3f9a1c") || !strings.Contains(rep.Remote, "memory:***@") {
		t.Fatalf("report: %+v", rep)
	}
	noSecretIn(t, a.repo.GitDir(), "tok-3f9a1c")

	// An older version's config, with the token in origin's URL.
	testutil.Git(t, a.repo.Dir(), "remote", "set-url", "origin", remote)
	a.write(mkNote(a, "second", "y"))
	if rep := a.sync(); !rep.Pushed {
		t.Fatalf("second sync: %+v", rep)
	}
	noSecretIn(t, a.repo.GitDir(), "tok-3f9a1c")
	if got := strings.TrimSpace(testutil.Git(t, a.repo.Dir(), "remote", "get-url", "origin")); got != url {
		t.Errorf("origin is %q, want %q", got, url)
	}
}

// TestNetrcAndCredentialHelper: with nothing in the URL, credentials
// come from ~/.netrc, or else from the git credential helper the user
// configured (here git's own "store" helper and ~/.git-credentials),
// asked only after the hub refused the anonymous request, as git does.
func TestNetrcAndCredentialHelper(t *testing.T) {
	home := credHome(t)
	hub, url := startHub(t, "memory", "tok-77e0b2")
	host := strings.TrimPrefix(hub.URL, "http://")

	os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine 127.0.0.1\n  login memory\n  password tok-77e0b2\n"), 0o600)
	a := newMachine(t, "a", url)
	a.write(mkNote(a, "via netrc", "x"))
	if rep := a.sync(); !rep.Pushed {
		t.Fatalf("netrc: %+v", rep)
	}
	if hub.Refused() != 0 {
		t.Errorf("netrc credentials were not sent at once (%d refusals)", hub.Refused())
	}
	os.Remove(filepath.Join(home, ".netrc"))

	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[credential]\n\thelper = store\n"), 0o600)
	os.WriteFile(filepath.Join(home, ".git-credentials"), []byte("http://memory:tok-77e0b2@"+host+"\n"), 0o600)
	b := newMachine(t, "b", url)
	b.write(mkNote(b, "via helper", "y"))
	rep := b.sync()
	if !rep.Pushed || !rep.Fetched {
		t.Fatalf("credential helper: %+v", rep)
	}
	if hub.Refused() != 1 {
		t.Errorf("the helper should be asked once, after one refusal (%d refusals)", hub.Refused())
	}
	noSecretIn(t, b.repo.GitDir(), "tok-77e0b2")

	// A stored password the hub no longer accepts: one line saying so,
	// and the helper is told to forget it (git credential reject).
	os.WriteFile(filepath.Join(home, ".git-credentials"), []byte("http://memory:revoked-000@"+host+"\n"), 0o600)
	c := newMachine(t, "c", url)
	c.write(mkNote(c, "stays local", "z"))
	_, err := c.repo.Sync(ctx, Options{Remote: url, Timeout: 10 * time.Second})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "authentication failed for "+url+" (credentials from git credential helper)") {
		t.Fatalf("want one line about the refused helper credentials, got %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(home, ".git-credentials")); strings.Contains(string(data), "revoked-000") {
		t.Error("the refused credentials are still stored")
	}
}

// TestWrongPasswordIsOneLine: a refused password is reported in one
// line, redacted, without the HTML page the hub sent, for sync and for
// doctor's reachability probe.
func TestWrongPasswordIsOneLine(t *testing.T) {
	credHome(t)
	_, url := startHub(t, "memory", "right-8c1d")
	bad := httphub.WithCredentials(url, "memory", "wrong-5b7e")
	m := newMachine(t, "m", bad)
	m.write(mkNote(m, "kept", "x"))
	_, err := m.repo.Sync(ctx, Options{Remote: bad, Timeout: 10 * time.Second})
	for _, e := range []error{err, m.repo.Reachable(ctx, bad, 10*time.Second)} {
		if e == nil {
			t.Fatal("no error for a wrong password")
		}
		msg := e.Error()
		if strings.Contains(msg, "\n") || strings.Contains(msg, "wrong-5b7e") || strings.Contains(strings.ToLower(msg), "html") ||
			!strings.Contains(msg, "authentication failed for "+Redact(bad)) {
			t.Errorf("error: %q", msg)
		}
		if !errors.Is(e, transport.ErrAuthenticationRequired) {
			t.Errorf("%v does not unwrap to ErrAuthenticationRequired", e)
		}
	}
	if head, _ := m.repo.Head(); head.IsZero() {
		t.Error("note not committed")
	}
	noSecretIn(t, m.repo.GitDir(), "wrong-5b7e")
}
