package gitsync

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHTTPRemote syncs two machines through the git CLI's own smart-HTTP
// server (git http-backend over CGI) that requires basic auth.
func TestHTTPRemote(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	root := t.TempDir()
	hub := filepath.Join(root, "hub.git")
	gitCmd(t, root, "init", "--bare", "-b", "main", hub)
	gitCmd(t, hub, "config", "http.receivepack", "true")
	backend := &cgi.Handler{Path: gitBin, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=memory"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "memory" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="anamnesis"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "http://memory:s3cret@", 1) + "/hub.git"

	a, b := newMachine(t, "a", url), newMachine(t, "b", url)
	rel := a.write(mkNote(a, "over http", "smart http works"))
	if rep := a.sync(); !rep.Pushed {
		t.Fatalf("push over http: %+v", rep)
	}
	b.sync()
	if b.read(rel).Body != "smart http works" {
		t.Fatal("note did not arrive over http")
	}
	if !strings.Contains(gitCmd(t, hub, "log", "--oneline", "main"), "sync from a") {
		t.Error("hub does not have a's commit")
	}

	// Wrong credentials: a clear error, and the local commit stays.
	bad := strings.Replace(url, "s3cret", "wrong", 1)
	c := newMachine(t, "c", bad)
	c.write(mkNote(c, "stays local", "x"))
	_, err = c.repo.Sync(ctx, Options{Remote: bad, Timeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "local notes are committed") {
		t.Fatalf("want an auth error, got %v", err)
	}
	if head, _ := c.repo.Head(); head.IsZero() {
		t.Fatal("note not committed")
	}
}

// TestSSHWithoutCredentialsFailsClearly: no agent and no key files means a
// one-line error, never a prompt and never a hang.
func TestSSHWithoutCredentialsFailsClearly(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("SSH_AUTH_SOCK", "")
	for _, url := range []string{"ssh://git@example.invalid/memory.git", "git@example.invalid:memory.git"} {
		_, err := newRemoteAuth(url, "")
		if err == nil || !strings.Contains(err.Error(), "no ssh agent") {
			t.Errorf("%s: %v", url, err)
		}
	}
	// With a key file present, auth is built from it without prompting.
	os.MkdirAll(filepath.Join(os.Getenv("HOME"), ".ssh"), 0o700)
	key := filepath.Join(os.Getenv("HOME"), ".ssh", "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Skipf("ssh-keygen unavailable: %v %s", err, out)
	}
	if a, err := newRemoteAuth("me@example.invalid:memory.git", ""); err != nil || a.method == nil || !strings.Contains(a.method.String(), "me") {
		t.Errorf("key file auth: %v %v", a, err)
	}
}
