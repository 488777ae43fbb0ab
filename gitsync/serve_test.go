package gitsync

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
)

type allowAll struct{}

func (allowAll) Authorize(context.Context, string) (string, error) { return "tester", nil }

type denyAll struct{}

func (denyAll) Authorize(context.Context, string) (string, error) { return "", ErrForbidden }

func commit(t *testing.T, dir, name, content string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
	os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	testutil.Git(t, dir, "add", name)
	testutil.Git(t, dir, "commit", "-q", "-m", "add "+name)
}

func serveRepo(t *testing.T, auth Authorizer) (repo, url string) {
	repo = filepath.Join(t.TempDir(), "memory")
	testutil.Git(t, t.TempDir(), "init", "-q", "-b", "main", repo)
	commit(t, repo, "semantic/a.md", "first note\n")
	srv := httptest.NewServer(&Handler{GitDir: filepath.Join(repo, ".git"), Auth: auth})
	t.Cleanup(srv.Close)
	return repo, srv.URL + "/memory"
}

func TestServeToGitCLIAndGoGit(t *testing.T) {
	repo, url := serveRepo(t, allowAll{})
	// git CLI clone, then an incremental fetch with negotiation.
	cli := filepath.Join(t.TempDir(), "cli")
	testutil.Git(t, t.TempDir(), "clone", "-q", url, cli)
	if data, _ := os.ReadFile(filepath.Join(cli, "semantic/a.md")); string(data) != "first note\n" {
		t.Fatal("git clone over our endpoint did not bring the note")
	}
	commit(t, repo, "semantic/b.md", "second note\n")
	commit(t, cli, "local-only.md", "client commit the server never saw\n")
	testutil.Git(t, cli, "fetch", "-q", "origin")
	if out := testutil.Git(t, cli, "show", "origin/main:semantic/b.md"); out != "second note\n" {
		t.Errorf("git fetch: %q", out)
	}
	// go-git clone and a fetch from a diverged clone (haves unknown to the server).
	gg := filepath.Join(t.TempDir(), "gogit")
	r, err := git.PlainClone(gg, false, &git.CloneOptions{URL: url})
	if err != nil {
		t.Fatalf("go-git clone: %v", err)
	}
	commit(t, gg, "mine.md", "go-git side commit\n")
	commit(t, repo, "semantic/c.md", "third note\n")
	err = r.Fetch(&git.FetchOptions{RefSpecs: []config.RefSpec{"+refs/heads/*:refs/remotes/origin/*"}})
	if err != nil {
		t.Fatalf("go-git fetch of a diverged clone: %v", err)
	}
	if out := testutil.Git(t, gg, "show", "origin/main:semantic/c.md"); out != "third note\n" {
		t.Errorf("go-git fetch: %q", out)
	}
	testutil.Git(t, gg, "fsck", "--strict")
}

func TestServeRefusesStrangersAndPushes(t *testing.T) {
	_, url := serveRepo(t, denyAll{})
	if out, err := testutil.TryGit(t.TempDir(), "clone", "-q", url, "x"); err == nil || !strings.Contains(out, "403") {
		t.Errorf("denied clone: %v %s", err, out)
	}
	repo, open := serveRepo(t, allowAll{})
	cli := filepath.Join(t.TempDir(), "cli")
	testutil.Git(t, t.TempDir(), "clone", "-q", open, cli)
	commit(t, cli, "intruder.md", "should not land\n")
	if _, err := testutil.TryGit(cli, "push", "origin", "main"); err == nil {
		t.Fatal("push was accepted")
	}
	if _, err := os.Stat(filepath.Join(repo, "intruder.md")); err == nil {
		t.Fatal("push reached the served checkout")
	}
	log := testutil.Git(t, repo, "log", "--oneline")
	if strings.Contains(log, "intruder") {
		t.Fatal("push landed in history")
	}
}

func TestServeRejectsBadRequests(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "memory")
	testutil.Git(t, t.TempDir(), "init", "-q", "-b", "main", repo)
	commit(t, repo, "a.md", "x")
	h := &Handler{GitDir: filepath.Join(repo, ".git"), Auth: allowAll{}}
	post := func(body []byte) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/memory/git-upload-pack", bytes.NewReader(body)))
		return rec.Code
	}
	for name, body := range map[string][]byte{
		"garbage":         []byte("this is not pkt-line data"),
		"bad length":      []byte("zzzzwant"),
		"no flush":        []byte("0032want 0000000000000000000000000000000000000000\n"),
		"no wants":        []byte("00000009done\n"),
		"bad have":        []byte("0032want " + strings.Repeat("a", 40) + "\n00000010have nothing\n0009done\n"),
		"unknown trailer": []byte("0032want " + strings.Repeat("a", 40) + "\n0000000cbogus\n"),
	} {
		if code := post(body); code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", name, code)
		}
	}
	if code := post(bytes.Repeat([]byte("0"), MaxRequestBody+10)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d", code)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/memory/info/refs?service=git-receive-pack", nil))
	if rec.Code != http.StatusForbidden {
		t.Errorf("receive-pack advertisement: %d", rec.Code)
	}
}
