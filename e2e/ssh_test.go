//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sshServer is a real OpenSSH sshd on 127.0.0.1 with its own config and
// host keys (ED25519, ECDSA and RSA, all offered, as a stock server does),
// public-key login only, for the user running the tests. The hub lives
// in a directory of its own under that user's home (sshd gives sessions
// the home from the password database, and ~ in a remote means it), and
// is removed afterwards.
type sshServer struct {
	t        *testing.T
	port     string
	login    string // the user sessions run as
	authKeys string // the AuthorizedKeysFile
	hubRel   string // the hub's directory, relative to the login's home
	hubAbs   string
}

func startSSHD(t *testing.T) *sshServer {
	t.Helper()
	needDebian(t, []string{"/usr/sbin/sshd", "ssh-keygen", "ssh-keyscan", "ssh-agent", "ssh-add", "git"}, "openssh-server", "openssh-client", "git")
	me, err := osuser.Current()
	if err != nil {
		t.Skipf("skipped: no current user: %v", err)
	}
	dir := t.TempDir()
	s := &sshServer{t: t, login: me.Username, authKeys: filepath.Join(dir, "authorized_keys")}
	if err := os.WriteFile(s.authKeys, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var hostKeys []string
	for _, typ := range []string{"ed25519", "ecdsa", "rsa"} {
		p := filepath.Join(dir, "ssh_host_"+typ+"_key")
		sshRun(t, "ssh-keygen", "-q", "-t", typ, "-N", "", "-f", p)
		hostKeys = append(hostKeys, "HostKey "+p)
	}
	if os.Geteuid() == 0 {
		// sshd refuses to start as root without its privilege separation directory.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hub, err := os.MkdirTemp(me.HomeDir, "anamnesis-e2e-ssh-")
	if err != nil {
		t.Skipf("skipped: cannot make the hub under %s: %v", me.HomeDir, err)
	}
	t.Cleanup(func() { os.RemoveAll(hub) })
	s.hubAbs, s.hubRel = hub, filepath.Base(hub)
	sshRun(t, "git", "init", "-q", "--bare", "-b", "main", filepath.Join(hub, "memory.git"))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, s.port, _ = net.SplitHostPort(ln.Addr().String())
	ln.Close()
	cfg := filepath.Join(dir, "sshd_config")
	text := strings.Join(append(hostKeys,
		"ListenAddress 127.0.0.1",
		"Port "+s.port,
		"AuthorizedKeysFile "+s.authKeys,
		"AllowUsers "+s.login,
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"StrictModes no",
		"PermitRootLogin prohibit-password",
		"PidFile none",
		"LogLevel VERBOSE",
	), "\n") + "\n"
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "sshd.log")
	cmd := exec.Command("/usr/sbin/sshd", "-D", "-f", cfg, "-E", logPath)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			t.Logf("sshd log:\n%s", tail(log, 4000))
		}
	})
	// Ready when it sends its banner.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+s.port, time.Second)
		if err == nil {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "SSH-2.0-") {
				break
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("sshd did not answer on 127.0.0.1:%s within 10s: %v\n%s", s.port, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("sshd on 127.0.0.1:%s, login %s, hub ~/%s/memory.git", s.port, s.login, s.hubRel)
	return s
}

// authorize lets the public key at pub log in.
func (s *sshServer) authorize(pub string) {
	s.t.Helper()
	data, err := os.ReadFile(pub)
	if err != nil {
		s.t.Fatal(err)
	}
	f, err := os.OpenFile(s.authKeys, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	f.Write(data)
}

// keyscan returns the server's host keys of type typ as known_hosts lines.
func (s *sshServer) keyscan(typ string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ssh-keyscan", "-p", s.port, "-t", typ, "127.0.0.1").Output()
	if err != nil || len(out) == 0 {
		s.t.Fatalf("ssh-keyscan -t %s: %v %s", typ, err, out)
	}
	return string(out)
}

func sshRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// sshMachine is one machine: a home with .ssh/, its own machine id, and
// no ssh agent unless it starts one.
type sshMachine struct {
	*user
	ssh string
}

func newSSHMachine(t *testing.T, id string) *sshMachine {
	u := newUser(t)
	var env []string
	for _, e := range u.env {
		if !strings.HasPrefix(e, "SSH_AUTH_SOCK=") && !strings.HasPrefix(e, "SSH_AGENT_PID=") && !strings.HasPrefix(e, "ANAMNESIS_MACHINE_ID=") {
			env = append(env, e)
		}
	}
	u.env = append(env, "ANAMNESIS_MACHINE_ID="+id)
	m := &sshMachine{user: u, ssh: filepath.Join(u.home, ".ssh")}
	if err := os.MkdirAll(m.ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	return m
}

// key makes ~/.ssh/NAME (unencrypted ED25519) and returns its path.
func (m *sshMachine) key(name string) string {
	p := filepath.Join(m.ssh, name)
	sshRun(m.t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", p)
	return p
}

func (m *sshMachine) writeSSH(name, text string) {
	if err := os.WriteFile(filepath.Join(m.ssh, name), []byte(text), 0o600); err != nil {
		m.t.Fatal(err)
	}
}

// agent starts a real ssh-agent for this machine holding keys.
func (m *sshMachine) agent(keys ...string) {
	sock := filepath.Join(m.t.TempDir(), "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The socket file appears when the agent binds it, a moment before
	// it listens (ssh-add then got "Connection refused"): wait until a
	// connection is accepted.
	for i := 0; i < 250; i++ {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	m.env = append(m.env, "SSH_AUTH_SOCK="+sock)
	for _, k := range keys {
		if _, errs, err := m.run(m.home, "", "ssh-add", k); err != nil {
			m.t.Fatalf("ssh-add %s: %v %s", k, err, errs)
		}
	}
	out, _, _ := m.run(m.home, "", "ssh-add", "-l")
	m.t.Logf("agent holds: %s", strings.TrimSpace(out))
}

// initRemote sets the remote without a first sync.
func (m *sshMachine) initRemote(remote string) {
	m.anamnesis("init", "--no-claude", "--no-mcp", "--no-git-hooks", "--no-sync", "-y", "--remote", remote)
}

// syncFails runs a sync that must fail: exit 1, one line on stderr
// containing each of want, within limit (a hang would take --timeout).
func (m *sshMachine) syncFails(limit time.Duration, want ...string) string {
	m.t.Helper()
	start := time.Now()
	_, errs, err := m.run(m.home, "", m.bin, "sync", "--timeout", "30s")
	took := time.Since(start)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		m.t.Fatalf("sync: want exit 1, got %v\n%s", err, errs)
	}
	line := strings.TrimRight(errs, "\n")
	if strings.Contains(line, "\n") {
		m.t.Errorf("sync: want one line, got:\n%s", errs)
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			m.t.Errorf("sync: %q lacks %q", line, w)
		}
	}
	if took > limit {
		m.t.Errorf("sync took %s to fail (limit %s)", took.Round(time.Millisecond), limit)
	}
	m.t.Logf("failed in %s: %s", took.Round(time.Millisecond), line)
	return line
}

// TestSSHHub syncs machines through a real sshd the ways users set ssh up:
// known_hosts as `ssh` records it (only the ED25519 key, plain or hashed),
// a key file alone, an agent alone, an agent holding no keys or the wrong
// ones beside a key file, a ~/.ssh/config alias with HostName, User, Port,
// IdentityFile and IdentitiesOnly, and the remote forms
// ssh://user@host:port/~/path, user@alias:~/path and alias:path.
func TestSSHHub(t *testing.T) {
	s := startSSHD(t)
	ed25519 := s.keyscan("ed25519")
	aliasConfig := func(extra string) string {
		return fmt.Sprintf("Host hub\n  HostName 127.0.0.1\n  Port %s\n%s", s.port, extra)
	}

	// A: a key file only (no agent), known_hosts with only the ED25519
	// key, ssh://user@host:port/~/path. Writes a note and pushes it.
	a := newSSHMachine(t, "a")
	s.authorize(a.key("id_ed25519") + ".pub")
	a.writeSSH("known_hosts", ed25519)
	a.initRemote(fmt.Sprintf("ssh://%s@127.0.0.1:%s/~/%s/memory.git", s.login, s.port, s.hubRel))
	id := strings.TrimSpace(a.anamnesis("write", "--type", "semantic", "--title", "over ssh", "--body", "the hub speaks ssh zanzibar"))
	out := a.anamnesis("sync")
	t.Logf("a: %s", out)
	if !strings.Contains(out, "pushed=true") {
		t.Fatalf("a did not push: %s", out)
	}
	if log := sshRun(t, "git", "--git-dir", filepath.Join(s.hubAbs, "memory.git"), "log", "--oneline", "main"); !strings.Contains(log, "sync from a") {
		t.Fatalf("hub lacks a's commit: %s", log)
	}

	// B: an agent only (the key is in the agent, no file in ~/.ssh), a
	// hashed known_hosts, user@alias:~/path with HostName and Port from
	// ~/.ssh/config.
	t.Run("agent only, hashed known_hosts, user@alias:~/path", func(t *testing.T) {
		b := newSSHMachine(t, "b")
		key := b.key("id_ed25519")
		s.authorize(key + ".pub")
		moved := filepath.Join(t.TempDir(), "agent_key")
		os.Rename(key, moved)
		os.Remove(key + ".pub")
		b.agent(moved)
		b.writeSSH("known_hosts", ed25519)
		sshRun(t, "ssh-keygen", "-q", "-H", "-f", filepath.Join(b.ssh, "known_hosts"))
		if kh, _ := os.ReadFile(filepath.Join(b.ssh, "known_hosts")); !strings.HasPrefix(string(kh), "|1|") {
			t.Fatalf("known_hosts not hashed: %s", kh)
		}
		b.writeSSH("config", aliasConfig(""))
		b.initRemote(fmt.Sprintf("%s@hub:~/%s/memory.git", s.login, s.hubRel))
		t.Logf("b: %s", b.anamnesis("sync"))
		if got := b.anamnesis("show", id); !strings.Contains(got, "zanzibar") {
			t.Errorf("b does not see a's note: %s", got)
		}
	})

	// C: a ~/.ssh/config alias giving HostName, User, Port, IdentityFile
	// and IdentitiesOnly, an agent holding only a key the server refuses,
	// and a path relative to the home (alias:path).
	t.Run("config alias with IdentityFile and IdentitiesOnly", func(t *testing.T) {
		c := newSSHMachine(t, "c")
		s.authorize(c.key("work_key") + ".pub")
		c.agent(c.key("unauthorized"))
		c.writeSSH("known_hosts", ed25519)
		c.writeSSH("config", aliasConfig(fmt.Sprintf("  User %s\n  IdentityFile ~/.ssh/work_key\n  IdentitiesOnly yes\n", s.login)))
		c.initRemote("hub:" + s.hubRel + "/memory.git")
		t.Logf("c: %s", c.anamnesis("sync"))
		if got := c.anamnesis("show", id); !strings.Contains(got, "zanzibar") {
			t.Errorf("c does not see a's note: %s", got)
		}
	})

	// D: an agent that is running but holds no keys must not hide a
	// valid ~/.ssh/id_ed25519.
	t.Run("empty agent beside a key file", func(t *testing.T) {
		d := newSSHMachine(t, "d")
		s.authorize(d.key("id_ed25519") + ".pub")
		d.agent()
		d.writeSSH("known_hosts", ed25519)
		d.initRemote(fmt.Sprintf("ssh://%s@127.0.0.1:%s/~/%s/memory.git", s.login, s.port, s.hubRel))
		t.Logf("d: %s", d.anamnesis("sync"))
		if got := d.anamnesis("show", id); !strings.Contains(got, "zanzibar") {
			t.Errorf("d does not see a's note: %s", got)
		}
	})
}

// TestSSHFailuresAreOneLine: an unknown host, a changed host key and a
// key the server refuses each fail at once with one line that says how
// to fix it; nothing prompts, nothing hangs, and the note stays committed.
func TestSSHFailuresAreOneLine(t *testing.T) {
	s := startSSHD(t)
	remote := fmt.Sprintf("ssh://%s@127.0.0.1:%s/~/%s/memory.git", s.login, s.port, s.hubRel)
	const limit = 3 * time.Second

	t.Run("unknown host", func(t *testing.T) {
		m := newSSHMachine(t, "u")
		s.authorize(m.key("id_ed25519") + ".pub")
		m.initRemote(remote)
		m.anamnesis("write", "--type", "semantic", "--title", "kept", "--body", "stays committed")
		m.syncFails(limit, "is not in ~/.ssh/known_hosts", fmt.Sprintf("run `ssh -p %s %s@127.0.0.1` once", s.port, s.login), "local notes are committed")
		if log, _, err := m.run(filepath.Join(m.store, "memory"), "", "git", "log", "--oneline"); err != nil || log == "" {
			t.Errorf("note not committed: %v %s", err, log)
		}
	})

	t.Run("changed host key", func(t *testing.T) {
		m := newSSHMachine(t, "x")
		s.authorize(m.key("id_ed25519") + ".pub")
		other := m.key("impostor")
		pub, _ := os.ReadFile(other + ".pub")
		m.writeSSH("known_hosts", fmt.Sprintf("[127.0.0.1]:%s %s", s.port, pub))
		m.initRemote(remote)
		m.syncFails(limit, "CHANGED", "~/.ssh/known_hosts:1", fmt.Sprintf("`ssh-keygen -R '[127.0.0.1]:%s'`", s.port))
	})

	t.Run("wrong key", func(t *testing.T) {
		m := newSSHMachine(t, "w")
		m.key("id_ed25519") // never authorized
		m.agent(m.key("also_unauthorized"))
		m.writeSSH("known_hosts", s.keyscan("ed25519"))
		m.initRemote(remote)
		m.syncFails(limit, "the server refused every key tried", "~/.ssh/id_ed25519", "agent key ssh-ed25519", "authorized_keys")
	})
}
