package gitsync

import (
	"testing"
)

// TestParseSSHRemote checks the remotes git accepts for ssh, mapped as
// git's connect.c maps them.
func TestParseSSHRemote(t *testing.T) {
	for in, want := range map[string]sshRemote{
		"ssh://user@host:2222/~/memory.git":  {User: "user", Host: "host", Port: "2222", Path: "~/memory.git"},
		"ssh://host/~user/memory.git":        {Host: "host", Path: "~user/memory.git"},
		"ssh://git@host.example/srv/m.git":   {User: "git", Host: "host.example", Path: "/srv/m.git"},
		"git+ssh://host:22/abs.git":          {Host: "host", Port: "22", Path: "/abs.git"},
		"ssh://[::1]:2222/srv/m.git":         {Host: "::1", Port: "2222", Path: "/srv/m.git"},
		"user@host:~/memory.git":             {User: "user", Host: "host", Path: "~/memory.git"},
		"host:memory.git":                    {Host: "host", Path: "memory.git"},
		"alias:path/with:colon.git":          {Host: "alias", Path: "path/with:colon.git"},
		"git@github.com:u/r.git":             {User: "git", Host: "github.com", Path: "u/r.git"},
		"[git@host:2222]:~/memory.git":       {User: "git", Host: "host", Port: "2222", Path: "~/memory.git"},
		"[host]:/srv/m.git":                  {Host: "host", Path: "/srv/m.git"},
		"host:2222:memory.git":               {Host: "host", Path: "2222:memory.git"}, // git: no port in scp syntax
		"me@work@host:/srv/memory.git":       {User: "me@work", Host: "host", Path: "/srv/memory.git"},
		"ssh://user@host:2222/srv/%7Ex.git":  {User: "user", Host: "host", Port: "2222", Path: "/srv/~x.git"},
		"SSH://HOST/srv/m.git":               {Host: "HOST", Path: "/srv/m.git"},
		"ssh://user@host/~":                  {User: "user", Host: "host", Path: "~"},
		"user@host:/~/not-home-relative.git": {User: "user", Host: "host", Path: "/~/not-home-relative.git"},
	} {
		got, err := parseSSHRemote(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got != want {
			t.Errorf("parseSSHRemote(%q) = %+v, want %+v", in, got, want)
		}
	}
	for _, bad := range []string{"ssh://host", "ssh://host/", "host:", "ssh:///path", "ssh://host:99999/x", "/local/path", "https://host/x"} {
		if r, err := parseSSHRemote(bad); err == nil {
			t.Errorf("parseSSHRemote(%q) = %+v, want an error", bad, r)
		}
	}
}
