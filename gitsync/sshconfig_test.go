package gitsync

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSSHConfigLookup(t *testing.T) {
	home := t.TempDir()
	userCfg := filepath.Join(home, ".ssh", "config")
	sysCfg := filepath.Join(home, "etc", "ssh_config")
	writeFile(t, userCfg, `# a comment
Include conf.d/*.conf

Host hub memory-*  !memory-bad
    HostName 127.0.0.1   # trailing comment
    User=alice
    Port 2222
    IdentityFile ~/.ssh/hub_key
    IdentitiesOnly yes

Host hub
    Port 9999
    IdentityFile "~/.ssh/with space"

Host ?ther
    HostName other.example
    UserKnownHostsFile ~/.ssh/kh1 ~/.ssh/kh2
    # An Include inside a Host block applies only to that block's hosts.
    Include other.conf

Match originalhost jump
    ProxyJump bastion

Host *
    User fallback
    IdentityFile ~/.ssh/id_all
`)
	writeFile(t, filepath.Join(home, ".ssh", "conf.d", "10-inc.conf"), `Host included
  HostName inc.example
Host hub
  IdentityAgent none
`)
	writeFile(t, filepath.Join(home, ".ssh", "other.conf"), "Port 7\nHost *\nPort 8\n")
	writeFile(t, sysCfg, `Host *
  Port 22
  User sysuser
  GlobalKnownHostsFile /etc/ssh/other_known
`)
	files := []string{userCfg, sysCfg}

	got, err := lookupSSHConfig(files, "HUB", home, "me")
	if err != nil {
		t.Fatal(err)
	}
	if got.HostName != "127.0.0.1" || got.User != "alice" || got.Port != "2222" || !got.IdentitiesOnly || got.IdentityAgent != "none" {
		t.Errorf("hub: first value of each keyword wins: %+v", got)
	}
	if want := []string{"~/.ssh/hub_key", "~/.ssh/with space", "~/.ssh/id_all"}; !reflect.DeepEqual(got.IdentityFiles, want) {
		t.Errorf("IdentityFile accumulates in order: %q, want %q", got.IdentityFiles, want)
	}
	if want := []string{"/etc/ssh/other_known"}; !reflect.DeepEqual(got.GlobalKnownHosts, want) {
		t.Errorf("system config read after the user's: %q", got.GlobalKnownHosts)
	}

	if got, _ := lookupSSHConfig(files, "memory-1", home, "me"); got.HostName != "127.0.0.1" {
		t.Errorf("memory-* should match memory-1: %+v", got)
	}
	if got, _ := lookupSSHConfig(files, "memory-bad", home, "me"); got.HostName != "" || got.User != "fallback" {
		t.Errorf("!memory-bad negates the whole Host line: %+v", got)
	}
	if got, _ := lookupSSHConfig(files, "other", home, "me"); got.HostName != "other.example" || !reflect.DeepEqual(got.UserKnownHosts, []string{"~/.ssh/kh1", "~/.ssh/kh2"}) {
		t.Errorf("?ther should match other: %+v", got)
	}
	if got, _ := lookupSSHConfig(files, "other", home, "me"); got.Port != "7" {
		t.Errorf("Include inside a matching Host block: %+v", got)
	}
	if got, _ := lookupSSHConfig(files, "nowhere", home, "me"); got.Port == "7" || got.Port == "8" {
		t.Errorf("Include inside a Host block that does not match sets nothing: %+v", got)
	}
	if got, _ := lookupSSHConfig(files, "included", home, "me"); got.HostName != "inc.example" {
		t.Errorf("Include relative to ~/.ssh: %+v", got)
	}
	if got, _ := lookupSSHConfig(files, "jump", home, "me"); got.Proxy != "proxyjump bastion" {
		t.Errorf("Match originalhost: %+v", got)
	}
	if got, _ := lookupSSHConfig(files, "nowhere", home, "me"); got.HostName != "" || got.User != "fallback" || got.Port != "22" {
		t.Errorf("Host * and the system file: %+v", got)
	}
	if got, err := lookupSSHConfig([]string{filepath.Join(home, "missing")}, "x", home, "me"); err != nil || got.HostName != "" {
		t.Errorf("a missing config is no error: %+v %v", got, err)
	}

	writeFile(t, userCfg, "Host x\n  IdentityFile \"unterminated\n")
	if _, err := lookupSSHConfig(files, "x", home, "me"); err == nil || !strings.Contains(err.Error(), "config:2") {
		t.Errorf("a malformed line names file and line: %v", err)
	}
	writeFile(t, userCfg, "Include config\n")
	if _, err := lookupSSHConfig(files, "x", home, "me"); err == nil || !strings.Contains(err.Error(), "nested") {
		t.Errorf("an Include loop ends: %v", err)
	}
}

func TestSSHMatchCriteria(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, "config")
	writeFile(t, cfg, `Host alias
  HostName real.example
Match host real.example user bob
  Port 1
Match host *.example !localuser me
  Port 2
Match exec "true"
  Port 3
Match all
  Port 4
`)
	if got, _ := lookupSSHConfig([]string{cfg}, "bob@ignored", home, "me"); got.Port != "4" {
		t.Errorf("exec never matches, all does: %+v", got)
	}
	got, err := lookupSSHConfig([]string{cfg}, "alias", home, "bob")
	if err != nil {
		t.Fatal(err)
	}
	// "Match user" is the remote user; with no User set it is the local one.
	if got.Port != "1" {
		t.Errorf("Match host uses the HostName: %+v", got)
	}
	if got, _ := lookupSSHConfig([]string{cfg}, "alias", home, "me"); got.Port != "4" {
		t.Errorf("!localuser me must not match for me: %+v", got)
	}
}

func TestSSHPattern(t *testing.T) {
	for _, c := range []struct {
		s, p string
		want bool
	}{
		{"host", "host", true}, {"host", "h*", true}, {"host", "*", true}, {"host", "h?st", true},
		{"host", "h?t", false}, {"a.b.example", "*.example", true}, {"example", "*.example", false},
		{"", "*", true}, {"host", "", false}, {"abc", "a*c*", true}, {"abcd", "a*c", false},
	} {
		if got := sshPattern(c.s, c.p); got != c.want {
			t.Errorf("sshPattern(%q, %q) = %v", c.s, c.p, got)
		}
	}
}

func TestExpandSSHPath(t *testing.T) {
	tk := sshTokens{home: "/home/me", hostName: "real.example", alias: "hub", port: "2222", remoteUser: "git", localUser: "me"}
	t.Setenv("KEYDIR", "/keys")
	for in, want := range map[string]string{
		"~/.ssh/id_ed25519":   "/home/me/.ssh/id_ed25519",
		"%d/.ssh/%h_%r":       "/home/me/.ssh/real.example_git",
		"~/.ssh/%n-%p-%u-%%":  "/home/me/.ssh/hub-2222-me-%",
		"${KEYDIR}/k":         "/keys/k",
		"/abs/path":           "/abs/path",
		"~":                   "/home/me",
		"relative/stays/%h":   "relative/stays/real.example",
		"~/.ssh/known_hosts2": "/home/me/.ssh/known_hosts2",
	} {
		got, err := expandSSHPath(in, tk)
		if err != nil || got != want {
			t.Errorf("expandSSHPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"%z", "trailing%", "${UNSET_ANAMNESIS_VAR}", "${open"} {
		if _, err := expandSSHPath(bad, tk); err == nil {
			t.Errorf("expandSSHPath(%q): want an error", bad)
		}
	}
}

func TestSplitSSHConfigLine(t *testing.T) {
	for in, want := range map[string][]string{
		"Host a b":                    {"host", "a", "b"},
		"  HostName=example.com":      {"hostname", "example.com"},
		"Port = 22":                   {"port", "22"},
		`IdentityFile "a b" c # no`:   {"identityfile", "a b", "c"},
		"\tUser\tbob":                 {"user", "bob"},
		"IdentitiesOnly":              {"identitiesonly"},
		"# only a comment":            {""},
		"":                            {""},
		`ProxyCommand ssh -W %h:%p x`: {"proxycommand", "ssh", "-W", "%h:%p", "x"},
	} {
		kw, args, err := splitSSHConfigLine(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := append([]string{kw}, args...); !reflect.DeepEqual(got, want) {
			t.Errorf("splitSSHConfigLine(%q) = %q, want %q", in, got, want)
		}
	}
}
