package gitsync

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/go-git/go-git/v5/plumbing/transport"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
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
	testutil.Git(t, root, "init", "--bare", "-b", "main", hub)
	testutil.Git(t, hub, "config", "http.receivepack", "true")
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
	if !strings.Contains(testutil.Git(t, hub, "log", "--oneline", "main"), "sync from a") {
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
		if err == nil || !strings.Contains(err.Error(), "no ssh agent") || strings.Contains(err.Error(), "\n") {
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
	// An encrypted key that no agent holds is named, with what to do.
	os.Remove(key)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "secret", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	if _, err := newRemoteAuth("me@example.invalid:memory.git", ""); err == nil || !strings.Contains(err.Error(), "~/.ssh/id_ed25519 encrypted and not in the agent: add it with ssh-add") {
		t.Errorf("encrypted key: %v", err)
	}
}

// sshLab is an ssh server of golang.org/x/crypto/ssh on 127.0.0.1 that
// offers ED25519, ECDSA and RSA host keys (as a stock OpenSSH server does)
// and accepts the public keys in allowed; a home with ~/.ssh for the
// client side.
type sshLab struct {
	t        *testing.T
	home     string
	addr     string
	port     string
	hostKeys []ssh.Signer
	allowed  []ssh.PublicKey
	mu       sync.Mutex
	tried    []string // fingerprints of the keys clients offered
	cfg      *ssh.ServerConfig
}

func newSSHLab(t *testing.T) *sshLab {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen not installed")
	}
	l := &sshLab{t: t, home: t.TempDir()}
	t.Setenv("HOME", l.home)
	t.Setenv("SSH_AUTH_SOCK", "")
	os.MkdirAll(filepath.Join(l.home, ".ssh"), 0o700)
	dir := t.TempDir()
	for _, typ := range []string{"ed25519", "ecdsa", "rsa"} {
		l.hostKeys = append(l.hostKeys, l.keygen(filepath.Join(dir, typ), typ))
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		l.mu.Lock()
		l.tried = append(l.tried, ssh.FingerprintSHA256(key))
		allowed := l.allowed
		l.mu.Unlock()
		for _, a := range allowed {
			if bytes.Equal(a.Marshal(), key.Marshal()) {
				return nil, nil
			}
		}
		return nil, errors.New("not authorized")
	}}
	for _, k := range l.hostKeys {
		cfg.AddHostKey(k)
	}
	l.cfg = cfg
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	l.addr = ln.Addr().String()
	_, l.port, _ = net.SplitHostPort(l.addr)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				// Each connection gets a copy: a test changes the
				// config while an earlier connection may still be in its
				// handshake.
				l.mu.Lock()
				conf := *l.cfg
				l.mu.Unlock()
				if sc, chans, reqs, err := ssh.NewServerConn(c, &conf); err == nil {
					go ssh.DiscardRequests(reqs)
					for ch := range chans {
						ch.Reject(ssh.Prohibited, "no sessions here")
					}
					sc.Close()
				}
			}()
		}
	}()
	return l
}

// keygen makes a key with ssh-keygen (OpenSSH's own file format) and
// returns its signer.
func (l *sshLab) keygen(path, typ string) ssh.Signer {
	l.t.Helper()
	args := []string{"-q", "-t", typ, "-N", "", "-f", path}
	if typ == "rsa" {
		args = append(args, "-b", "2048") // the default 3072 bits take seconds on a busy machine
	}
	if out, err := exec.Command("ssh-keygen", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ssh-keygen %v: %v %s", args, err, out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		l.t.Fatal(err)
	}
	s, err := ssh.ParsePrivateKey(data)
	if err != nil {
		l.t.Fatal(err)
	}
	return s
}

func (l *sshLab) userKey(name string) ssh.Signer {
	return l.keygen(filepath.Join(l.home, ".ssh", name), "ed25519")
}

// knownHosts writes ~/.ssh/known_hosts with the server's keys of the
// given types, as `ssh-keyscan -t` would, hashed if asked (ssh-keygen -H).
func (l *sshLab) knownHosts(hashed bool, types ...string) {
	l.t.Helper()
	var b strings.Builder
	for _, k := range l.hostKeys {
		for _, typ := range types {
			if k.PublicKey().Type() == typ {
				b.WriteString(knownhosts.Line([]string{l.addr}, k.PublicKey()) + "\n")
			}
		}
	}
	p := filepath.Join(l.home, ".ssh", "known_hosts")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		l.t.Fatal(err)
	}
	if hashed {
		if out, err := exec.Command("ssh-keygen", "-H", "-f", p).CombinedOutput(); err != nil {
			l.t.Fatalf("ssh-keygen -H: %v %s", err, out)
		}
		if data, _ := os.ReadFile(p); !strings.HasPrefix(string(data), "|1|") {
			l.t.Fatalf("not hashed: %s", data)
		}
	}
}

// agent starts a real ssh-agent holding the given key files.
func (l *sshLab) agent(keys ...string) {
	l.t.Helper()
	if _, err := exec.LookPath("ssh-agent"); err != nil {
		l.t.Skip("ssh-agent not installed")
	}
	sock := filepath.Join(l.t.TempDir(), "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The socket file appears at bind, before the agent listens: wait
	// until it answers (ssh-add in between was refused, a flaky CI run).
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	l.t.Setenv("SSH_AUTH_SOCK", sock)
	for _, k := range keys {
		add := exec.Command("ssh-add", k)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		if out, err := add.CombinedOutput(); err != nil {
			l.t.Fatalf("ssh-add %s: %v %s", k, err, out)
		}
	}
}

// connect authenticates to the lab server as sync would for remote, and
// returns the one-line error sync would show.
func (l *sshLab) connect(remote string) error {
	l.t.Helper()
	a, err := newRemoteAuth(remote, "")
	if err != nil {
		return err
	}
	m, ok := a.method.(gitssh.AuthMethod)
	if !ok {
		l.t.Fatalf("%s: not an ssh auth method: %T", remote, a.method)
	}
	return a.do(ctx, func(transport.AuthMethod) error {
		cfg, err := m.ClientConfig()
		if err != nil {
			return err
		}
		c, err := net.DialTimeout("tcp", l.addr, 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		conn, _, _, err := ssh.NewClientConn(c, l.addr, cfg)
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

func (l *sshLab) remote() string { return "ssh://me@127.0.0.1:" + l.port + "/~/memory.git" }

// TestSSHHostKeyAlgorithmsFollowKnownHosts: a known_hosts with only the
// server's ED25519 key (what `ssh host` records on first connect), plain
// or hashed, is enough even though the server prefers another key type.
func TestSSHHostKeyAlgorithmsFollowKnownHosts(t *testing.T) {
	l := newSSHLab(t)
	l.allowed = []ssh.PublicKey{l.userKey("id_ed25519").PublicKey()}
	for _, c := range []struct {
		types  []string
		hashed bool
	}{
		{[]string{ssh.KeyAlgoED25519}, false},
		{[]string{ssh.KeyAlgoED25519}, true},
		{[]string{ssh.KeyAlgoRSA}, false},
		{[]string{ssh.KeyAlgoECDSA256}, true},
	} {
		l.knownHosts(c.hashed, c.types...)
		if err := l.connect(l.remote()); err != nil {
			t.Errorf("known_hosts with %v (hashed %v): %v", c.types, c.hashed, err)
		}
	}
}

// TestSSHOffersEveryIdentity: agent keys and key files are all offered,
// so an agent that holds no keys (or the wrong ones) does not hide a
// valid ~/.ssh/id_ed25519; an agent alone works too.
func TestSSHOffersEveryIdentity(t *testing.T) {
	l := newSSHLab(t)
	// Every host key type: this test is about client keys alone.
	l.knownHosts(false, ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoRSA)
	good := l.userKey("id_ed25519")
	l.allowed = []ssh.PublicKey{good.PublicKey()}

	l.agent() // running, empty
	if err := l.connect(l.remote()); err != nil {
		t.Errorf("empty agent and a key file: %v", err)
	}
	other := filepath.Join(t.TempDir(), "other")
	l.keygen(other, "ed25519")
	l.agent(other) // running, holding a key the server refuses
	if err := l.connect(l.remote()); err != nil {
		t.Errorf("agent with another key and a key file: %v", err)
	}

	// Agent only: the key lives in the agent, no file in ~/.ssh.
	moved := filepath.Join(t.TempDir(), "id_ed25519")
	os.Rename(filepath.Join(l.home, ".ssh", "id_ed25519"), moved)
	os.Remove(filepath.Join(l.home, ".ssh", "id_ed25519.pub"))
	l.agent(moved)
	if err := l.connect(l.remote()); err != nil {
		t.Errorf("agent only: %v", err)
	}
}

// TestSSHConfigAliasWithIdentitiesOnly: a Host alias gives HostName,
// User, Port and IdentityFile; with IdentitiesOnly the agent's other keys
// are not offered (a server counting failed keys would cut us off).
func TestSSHConfigAliasWithIdentitiesOnly(t *testing.T) {
	l := newSSHLab(t)
	l.knownHosts(false, ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoRSA)
	work := l.keygen(filepath.Join(l.home, ".ssh", "work_key"), "ed25519")
	l.allowed = []ssh.PublicKey{work.PublicKey()}
	other := filepath.Join(t.TempDir(), "other")
	l.keygen(other, "ed25519")
	l.agent(other)
	cfg := "Host hub\n  HostName 127.0.0.1\n  Port " + l.port + "\n  User memory\n  IdentityFile ~/.ssh/work_key\n  IdentitiesOnly yes\n"
	if err := os.WriteFile(filepath.Join(l.home, ".ssh", "config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.connect("hub:~/memory.git"); err != nil {
		t.Fatalf("alias: %v", err)
	}
	if len(l.tried) != 1 || l.tried[0] != ssh.FingerprintSHA256(work.PublicKey()) {
		t.Errorf("IdentitiesOnly: offered %v, want only the IdentityFile's key", l.tried)
	}
}

// TestSSHFailuresSayWhatToDo: unknown host, changed host key and refused
// keys each give one line that says how to fix it, at once.
func TestSSHFailuresSayWhatToDo(t *testing.T) {
	l := newSSHLab(t)
	l.userKey("id_ed25519")
	start := time.Now()

	os.WriteFile(filepath.Join(l.home, ".ssh", "known_hosts"), nil, 0o600)
	err := l.connect(l.remote())
	want := "host key of " + l.addr + " is not in ~/.ssh/known_hosts: run `ssh -p " + l.port + " me@127.0.0.1` once to check and record it"
	if err == nil || err.Error() != want {
		t.Errorf("unknown host:\n got %v\nwant %s", err, want)
	}

	impostor := l.keygen(filepath.Join(t.TempDir(), "impostor"), "ed25519")
	os.WriteFile(filepath.Join(l.home, ".ssh", "known_hosts"), []byte(knownhosts.Line([]string{l.addr}, impostor.PublicKey())+"\n"), 0o600)
	err = l.connect(l.remote())
	if err == nil || !strings.Contains(err.Error(), "CHANGED") || !strings.Contains(err.Error(), "~/.ssh/known_hosts:1") ||
		!strings.Contains(err.Error(), "`ssh-keygen -R '[127.0.0.1]:"+l.port+"'`") {
		t.Errorf("changed host key: %v", err)
	}

	l.knownHosts(false, ssh.KeyAlgoED25519)
	err = l.connect(l.remote())
	if err == nil || !strings.HasPrefix(err.Error(), "the server refused every key tried for me@"+l.addr+" (~/.ssh/id_ed25519)") {
		t.Errorf("refused key: %v", err)
	}
	// A server that hangs up after a few refused keys (OpenSSH's
	// MaxAuthTries) gets the advice to name the key.
	l.mu.Lock()
	l.cfg.MaxAuthTries = 1
	l.mu.Unlock()
	k1, k2 := filepath.Join(t.TempDir(), "a1"), filepath.Join(t.TempDir(), "a2")
	l.keygen(k1, "ed25519")
	l.keygen(k2, "ed25519")
	l.agent(k1, k2)
	err = l.connect(l.remote())
	if err == nil || !strings.Contains(err.Error(), "hung up after too many refused keys") || !strings.Contains(err.Error(), "IdentitiesOnly yes") {
		t.Errorf("too many keys: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("failures took %s", d)
	}
}
