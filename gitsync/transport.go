package gitsync

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// sshAuth picks ssh credentials without ever prompting: the agent when
// SSH_AUTH_SOCK is set, else the first unencrypted default key file, with
// host keys checked against known_hosts.
func sshAuth(ep *transport.Endpoint, remote string) (transport.AuthMethod, error) {
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
	return nil, fmt.Errorf("remote %s: no ssh agent (SSH_AUTH_SOCK) and no unencrypted key in ~/.ssh (id_ed25519, id_ecdsa, id_rsa)", Redact(remote))
}
