package gitsync

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// TestResolveSSHRemote: the remote's user and port win over the config's,
// which win over the local user and 22; the dial URL go-git gets reaches
// the same host and asks git-upload-pack for the path git would.
func TestResolveSSHRemote(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, ".ssh", "config")
	writeFile(t, cfg, `Host hub
  HostName 127.0.0.1
  User cfguser
  Port 2222
  IdentityFile ~/.ssh/hub_%r
  UserKnownHostsFile ~/.ssh/hub_known none
Host *.lan
  HostName %h.example
`)
	env := sshEnv{home: home, localUser: "me", configs: []string{cfg}}
	for _, c := range []struct{ remote, dial, user, known string }{
		{"hub:~/memory.git", "cfguser@127.0.0.1:2222:~/memory.git", "cfguser", home + "/.ssh/hub_known"},
		{"hub:memory.git", "cfguser@127.0.0.1:2222:memory.git", "cfguser", ""},
		{"bob@hub:~/memory.git", "bob@127.0.0.1:2222:~/memory.git", "bob", ""},
		{"ssh://bob@hub:3333/~/memory.git", "bob@127.0.0.1:3333:~/memory.git", "bob", ""},
		{"ssh://hub/srv/memory.git", "ssh://cfguser@127.0.0.1:2222/srv/memory.git", "cfguser", ""},
		{"ssh://other.example/srv/memory.git", "ssh://me@other.example:22/srv/memory.git", "me", home + "/.ssh/known_hosts"},
		{"box.lan:m.git", "me@box.lan.example:22:m.git", "me", ""},
		{"ssh://user@[::1]:2222/srv/m.git", "ssh://user@[::1]:2222/srv/m.git", "user", ""},
	} {
		m := &sshMethod{}
		var err error
		m.t, err = resolveSSH(c.remote, env)
		if err != nil {
			t.Errorf("%s: %v", c.remote, err)
			continue
		}
		dial, err := m.dialURL()
		if err != nil || dial != c.dial {
			t.Errorf("%s: dial URL %q (%v), want %q", c.remote, dial, err, c.dial)
			continue
		}
		if m.t.user != c.user {
			t.Errorf("%s: user %q, want %q", c.remote, m.t.user, c.user)
		}
		if c.known != "" && (len(m.t.knownHosts) == 0 || m.t.knownHosts[0] != c.known) {
			t.Errorf("%s: known_hosts files %q, want %q first", c.remote, m.t.knownHosts, c.known)
		}
		// go-git must read the dial URL back as the same user, host, port and path.
		ep, err := transport.NewEndpoint(dial)
		if err != nil {
			t.Errorf("%s: go-git cannot parse %q: %v", c.remote, dial, err)
			continue
		}
		want := m.t.remote.Path
		if ep.Protocol != "ssh" || ep.User != m.t.user || strings.Trim(ep.Host, "[]") != m.t.host || ep.Path != want {
			t.Errorf("%s: go-git reads %q as %+v", c.remote, dial, ep)
		}
	}
	if got, _ := resolveSSH("hub:x", env); !reflect.DeepEqual(got.knownHosts, []string{home + "/.ssh/hub_known", "/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}) {
		t.Errorf("UserKnownHostsFile with none: %q", got.knownHosts)
	}

	writeFile(t, cfg, "Host jump\n  ProxyJump bastion\n")
	if _, err := resolveSSH("jump:m.git", env); err == nil || !strings.Contains(err.Error(), "proxyjump bastion") {
		t.Errorf("a ProxyJump host is refused clearly: %v", err)
	}
	if _, err := sshDialURL("u", "::1", "22", "~/m.git"); err == nil {
		t.Error("an IPv6 host with a home-relative path cannot be expressed for go-git: want an error")
	}
}

// TestSSHCommandHint: the command a failure suggests reaches the host the
// way the remote does, so the same ~/.ssh/config applies.
func TestSSHCommandHint(t *testing.T) {
	env := sshEnv{home: t.TempDir(), localUser: "me"}
	for remote, want := range map[string]string{
		"ssh://root@127.0.0.1:2222/~/m.git": "ssh -p 2222 root@127.0.0.1",
		"hub:~/m.git":                       "ssh hub",
		"git@github.com:u/r.git":            "ssh git@github.com",
	} {
		tg, err := resolveSSH(remote, env)
		if err != nil {
			t.Fatal(err)
		}
		if got := tg.sshCommand(); got != want {
			t.Errorf("%s: %q, want %q", remote, got, want)
		}
	}
}
