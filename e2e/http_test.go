//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/httphub"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/anamnesis-memory/anamnesis/note"
)

// webHub is a real web server in front of git: Debian's lighttpd running
// git http-backend as CGI, with basic authentication from an htpasswd
// file, on 127.0.0.1. Repositories live under root and are served at
// base + "/" + name.
type webHub struct {
	base       string // http://127.0.0.1:PORT/git, no credentials
	host       string // 127.0.0.1:PORT
	root       string
	user, pass string
}

const backend = "/usr/lib/git-core/git-http-backend"

func startLighttpd(t *testing.T) *webHub {
	t.Helper()
	needDebian(t, []string{"lighttpd", "htpasswd", "git", backend}, "lighttpd", "apache2-utils", "git")
	dir := t.TempDir()
	h := &webHub{root: filepath.Join(dir, "repos"), user: "memory", pass: "tok-5e2e7a"}
	os.MkdirAll(filepath.Join(dir, "www"), 0o755)
	os.MkdirAll(h.root, 0o755)
	if out, err := exec.Command("htpasswd", "-bcm", filepath.Join(dir, "htpasswd"), h.user, h.pass).CombinedOutput(); err != nil {
		t.Fatalf("htpasswd: %v\n%s", err, out)
	}
	// A free port: lighttpd binds it itself, so take one the kernel gave
	// and hand it over (retried if someone takes it meanwhile).
	for attempt := 0; attempt < 5; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		h.host = ln.Addr().String()
		ln.Close()
		port := h.host[strings.LastIndex(h.host, ":")+1:]
		conf := filepath.Join(dir, "lighttpd.conf")
		os.WriteFile(conf, []byte(fmt.Sprintf(`server.document-root = %q
server.bind = "127.0.0.1"
server.port = %s
server.errorlog = %q
server.modules = ("mod_alias", "mod_setenv", "mod_auth", "mod_authn_file", "mod_cgi")
alias.url = ("/git" => %q)
$HTTP["url"] =~ "^/git" {
  cgi.assign = ("" => "")
  setenv.add-environment = ("GIT_PROJECT_ROOT" => %q, "GIT_HTTP_EXPORT_ALL" => "")
}
auth.backend = "htpasswd"
auth.backend.htpasswd.userfile = %q
auth.require = ("/git" => ("method" => "basic", "realm" => "git", "require" => "valid-user"))
`, filepath.Join(dir, "www"), port, filepath.Join(dir, "error.log"), backend, h.root, filepath.Join(dir, "htpasswd"))), 0o644)
		cmd := exec.Command("lighttpd", "-D", "-f", conf)
		logf, _ := os.Create(filepath.Join(dir, "lighttpd.out"))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatalf("start lighttpd: %v", err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-exited
		})
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				deadline = time.Time{} // it failed to start (port taken?): next attempt
				continue
			default:
			}
			if c, err := net.DialTimeout("tcp", h.host, time.Second); err == nil {
				c.Close()
				h.base = "http://" + h.host + "/git"
				t.Logf("lighttpd with git http-backend on %s", h.base)
				return h
			}
			time.Sleep(50 * time.Millisecond)
		}
		cmd.Process.Kill()
		<-exited
	}
	out, _ := os.ReadFile(filepath.Join(dir, "lighttpd.out"))
	errlog, _ := os.ReadFile(filepath.Join(dir, "error.log"))
	t.Fatalf("lighttpd did not start:\n%s%s", out, errlog)
	return nil
}

// repo creates a bare repository with the given default branch; with
// readme, it gets a first commit holding a README.md (what a new hosted
// repository "with a README" is), pushed from a clone.
func (h *webHub) repo(t *testing.T, name, branch string, readme bool) string {
	t.Helper()
	dir := filepath.Join(h.root, name)
	testutil.Git(t, "", "init", "-q", "--bare", "-b", branch, dir)
	if readme {
		work := filepath.Join(t.TempDir(), "work")
		testutil.Git(t, "", "init", "-q", "-b", branch, work)
		os.WriteFile(filepath.Join(work, "README.md"), []byte("# memory\n\nNotes my machines share.\n"), 0o644)
		testutil.Git(t, work, "add", "README.md")
		testutil.Git(t, work, "commit", "-q", "-m", "Initial commit")
		testutil.Git(t, work, "push", "-q", dir, branch)
	}
	return h.base + "/" + name
}

func (h *webHub) withCreds(url, pass string) string {
	return strings.Replace(url, "://", "://"+h.user+":"+pass+"@", 1)
}

// machine is a user with a machine id and a remote, set up with init as
// a user does (no Claude Code, no MCP, no git hooks, no first sync).
func machine(t *testing.T, id, remote string) *user {
	t.Helper()
	u := newUser(t)
	u.env = append(u.env, "ANAMNESIS_MACHINE_ID="+id)
	u.anamnesis("init", "--yes", "--remote", remote, "--no-claude", "--no-mcp", "--no-git-hooks", "--no-sync")
	return u
}

// failing runs anamnesis expecting exit 1 and returns stderr and how long
// it took.
func (u *user) failing(args ...string) (string, time.Duration) {
	u.t.Helper()
	start := time.Now()
	out, errs, err := u.run(u.home, "", u.bin, args...)
	took := time.Since(start)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		u.t.Fatalf("%v: want exit 1, got %v\n%s%s", args, err, out, errs)
	}
	return errs, took
}

func oneLine(t *testing.T, what, s string) string {
	t.Helper()
	line := strings.TrimSpace(s)
	if strings.Contains(line, "\n") || strings.Contains(line, "<html") || strings.Contains(line, "<!DOCTYPE") {
		t.Errorf("%s: want one line, got:\n%s", what, s)
	}
	return line
}

// TestHTTPHubCredentials: a real web server with basic auth, reached with
// a token in the URL, with ~/.netrc, and with git's credential helper; a
// wrong password fails at once, in one line, and the note stays committed.
func TestHTTPHubCredentials(t *testing.T) {
	h := startLighttpd(t)
	url := h.repo(t, "hub.git", "main", false)

	a := machine(t, "desk", h.withCreds(url, h.pass))
	id := strings.TrimSpace(a.anamnesis("write", "--type", "semantic", "--title", "token in the url", "--body", "quetzal"))
	if out := a.anamnesis("sync"); strings.Contains(out, h.pass) || !strings.Contains(out, "pushed=true") {
		t.Fatalf("sync with a token in the URL:\n%s", out)
	}
	if cfg, _ := os.ReadFile(filepath.Join(a.store, "memory", ".git", "config")); strings.Contains(string(cfg), h.pass) {
		t.Error("the token reached memory/.git/config")
	}

	t.Run("netrc", func(t *testing.T) {
		b := machine(t, "laptop", url)
		os.WriteFile(filepath.Join(b.home, ".netrc"), []byte("machine 127.0.0.1\n  login "+h.user+"\n  password "+h.pass+"\n"), 0o600)
		b.anamnesis("sync")
		if out := b.anamnesis("show", id); !strings.Contains(out, "quetzal") {
			t.Fatalf("note not fetched with ~/.netrc: %s", out)
		}
		b.anamnesis("write", "--type", "semantic", "--title", "from netrc", "--body", "axolotl")
		if out := b.anamnesis("sync"); !strings.Contains(out, "pushed=true") {
			t.Fatalf("push with ~/.netrc: %s", out)
		}
	})

	t.Run("credential helper", func(t *testing.T) {
		c := machine(t, "tablet", url)
		c.run(c.home, "", "git", "config", "--global", "credential.helper", "store")
		os.WriteFile(filepath.Join(c.home, ".git-credentials"), []byte("http://"+h.user+":"+h.pass+"@"+h.host+"\n"), 0o600)
		c.anamnesis("sync")
		if out := c.anamnesis("search", "quetzal"); !strings.Contains(out, "token in the url") {
			t.Fatalf("note not fetched through the credential helper: %s", out)
		}
		c.anamnesis("write", "--type", "semantic", "--title", "from the helper", "--body", "pangolin")
		if out := c.anamnesis("sync"); !strings.Contains(out, "pushed=true") {
			t.Fatalf("push through the credential helper: %s", out)
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		d := machine(t, "kiosk", h.withCreds(url, "wrong-pass-77"))
		d.anamnesis("write", "--type", "semantic", "--title", "stays local", "--body", "x")
		errs, took := d.failing("sync", "--timeout", "20s")
		line := oneLine(t, "wrong password", errs)
		if !strings.Contains(line, "authentication failed") || strings.Contains(line, "wrong-pass-77") || !strings.Contains(line, "local notes are committed") {
			t.Errorf("wrong password: %s", line)
		}
		if took > 5*time.Second {
			t.Errorf("a refused password took %v", took)
		}
		if log := testutil.Git(t, filepath.Join(d.store, "memory"), "log", "--oneline"); !strings.Contains(log, "sync from kiosk") {
			t.Errorf("note not committed: %s", log)
		}
	})
}

// TestHTTPHubsAsUsersCreateThem: a hub created with a README is synced
// without the README ever being reported as a bad note, and a hub whose
// default branch is master stays on master.
func TestHTTPHubsAsUsersCreateThem(t *testing.T) {
	h := startLighttpd(t)

	t.Run("with a README", func(t *testing.T) {
		url := h.withCreds(h.repo(t, "readme.git", "main", true), h.pass)
		a := machine(t, "desk", url)
		a.anamnesis("write", "--type", "procedural", "--title", "readme hub", "--body", "kakapo")
		for i := 0; i < 2; i++ {
			if out := a.anamnesis("sync"); strings.Contains(out, "README.md") {
				t.Errorf("sync mentions the README:\n%s", out)
			}
		}
		if _, err := os.Stat(filepath.Join(a.store, "memory", "README.md")); err != nil {
			t.Fatalf("README not merged: %v", err)
		}
		if out := a.anamnesis("status"); strings.Contains(out, "README.md") || strings.Contains(out, "skipped") {
			t.Errorf("status:\n%s", out)
		}
		out, _, _ := a.run(a.home, "", a.bin, "doctor")
		if strings.Contains(out, "skipped by the index") || !strings.Contains(out, "(README.md) is synced but not indexed") {
			t.Errorf("doctor:\n%s", out)
		}
	})

	t.Run("default branch master", func(t *testing.T) {
		url := h.withCreds(h.repo(t, "master.git", "master", true), h.pass)
		a, b := machine(t, "desk", url), machine(t, "laptop", url)
		id := strings.TrimSpace(a.anamnesis("write", "--type", "semantic", "--title", "on master", "--body", "tuatara"))
		if out := a.anamnesis("sync"); !strings.Contains(out, "default branch master") {
			t.Errorf("sync does not say it follows master:\n%s", out)
		}
		b.anamnesis("sync")
		if out := b.anamnesis("show", id); !strings.Contains(out, "tuatara") {
			t.Errorf("b: %s", out)
		}
		if got := strings.TrimSpace(testutil.Git(t, filepath.Join(h.root, "master.git"), "for-each-ref", "--format=%(refname:short)", "refs/heads")); got != "master" {
			t.Errorf("hub branches %q, want master only", got)
		}
	})
}

// trickle is a TCP proxy that passes at most chunk bytes every interval in
// each direction, with small socket buffers on its side: a slow link that
// is never quiet for long.
type trickle struct {
	ln     net.Listener
	mu     sync.Mutex
	conns  []net.Conn
	closed chan struct{}
}

func startTrickle(t *testing.T, target string, chunk int, every time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &trickle{ln: ln, closed: make(chan struct{})}
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, chunk)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
				select {
				case <-time.After(every):
				case <-p.closed:
					return
				}
			}
			if err != nil {
				dst.(*net.TCPConn).CloseWrite()
				return
			}
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			c.(*net.TCPConn).SetReadBuffer(chunk)
			up.(*net.TCPConn).SetReadBuffer(chunk)
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go pipe(up, c)
			go pipe(c, up)
		}
	}()
	t.Cleanup(func() {
		close(p.closed)
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	return ln.Addr().String()
}

// TestHTTPSlowAndStalledHubs: --timeout is silence, not length. A first
// sync through a slow link (a real lighttpd behind a proxy passing 8 KB
// every 200 ms) takes several times --timeout and succeeds; a hub that
// accepts and never answers is given up on after about --timeout, in one
// line, the note committed.
func TestHTTPSlowAndStalledHubs(t *testing.T) {
	h := startLighttpd(t)
	url := h.repo(t, "big.git", "main", false)
	a := machine(t, "desk", h.withCreds(url, h.pass))
	// 300 notes written as files (faster than 300 processes), committed
	// and pushed by one sync, straight to the hub.
	const notes = 300
	buf := make([]byte, 600)
	for i := 0; i < notes; i++ {
		rand.Read(buf)
		n := note.New(note.TypeSemantic, fmt.Sprintf("bulk note %d", i), base32.StdEncoding.EncodeToString(buf), time.Now())
		n.MachineID = "desk"
		p := filepath.Join(a.store, "memory", n.RelPath())
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, note.Marshal(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out := a.anamnesis("sync"); !strings.Contains(out, "pushed=true") {
		t.Fatalf("bulk push: %s", out)
	}

	t.Run("slow but moving", func(t *testing.T) {
		slow := "http://" + h.user + ":" + h.pass + "@" + startTrickle(t, h.host, 8<<10, 200*time.Millisecond) + "/git/big.git"
		b := machine(t, "laptop", slow)
		start := time.Now()
		out, errs, err := b.run(b.home, "", b.bin, "sync", "--timeout", "2s")
		took := time.Since(start)
		t.Logf("first sync of %d notes through the slow link took %v", notes, took.Round(time.Millisecond))
		if err != nil {
			t.Fatalf("slow first sync failed after %v: %v\n%s%s", took, err, out, errs)
		}
		if took < 4*time.Second {
			t.Fatalf("the sync took %v: too fast to show a 2s timeout is not a deadline", took)
		}
		if !strings.Contains(out, fmt.Sprintf("reindexed %d added", notes)) {
			t.Errorf("not every note arrived:\n%s", out)
		}
	})

	t.Run("stalled", func(t *testing.T) {
		stalled := httphub.Stalled(t)
		c := machine(t, "kiosk", "http://"+h.user+":"+h.pass+"@"+stalled+"/git/big.git")
		c.anamnesis("write", "--type", "semantic", "--title", "stays local", "--body", "x")
		errs, took := c.failing("sync", "--timeout", "2s")
		line := oneLine(t, "stalled hub", errs)
		if !strings.Contains(line, "no data for 2s; local notes are committed") || strings.Contains(line, h.pass) {
			t.Errorf("stalled hub: %s", line)
		}
		if took < 2*time.Second || took > 4*time.Second {
			t.Errorf("gave up after %v, want about 2s", took)
		}
	})
}
