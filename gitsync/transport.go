package gitsync

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// authFor picks credentials for a remote without ever prompting: for ssh
// the agent when SSH_AUTH_SOCK is set, else the first unencrypted default
// key file, with host keys checked against known_hosts; for http(s) the
// user and password written in the URL, if any. Local paths need none.
func authFor(url string) (transport.AuthMethod, error) {
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return nil, fmt.Errorf("remote %q is not a git URL or path: %w", url, err)
	}
	switch ep.Protocol {
	case "ssh":
		user := ep.User
		if user == "" {
			user = "git"
		}
		if os.Getenv("SSH_AUTH_SOCK") != "" {
			a, err := ssh.NewSSHAgentAuth(user)
			if err == nil {
				return a, nil
			}
		}
		home, _ := os.UserHomeDir()
		for _, name := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			p := filepath.Join(home, ".ssh", name)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			a, err := ssh.NewPublicKeysFromFile(user, p, "")
			if err == nil {
				return a, nil
			}
		}
		return nil, fmt.Errorf("remote %s: no ssh agent (SSH_AUTH_SOCK) and no unencrypted key in ~/.ssh (id_ed25519, id_ecdsa, id_rsa)", url)
	case "http", "https":
		if ep.User != "" {
			return &http.BasicAuth{Username: ep.User, Password: ep.Password}, nil
		}
	}
	return nil, nil
}
