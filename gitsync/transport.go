package gitsync

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"time"

	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshEnv is where ssh settings come from: the home (~), the local user
// name (ssh's default remote user), the ssh_config files in the order
// ssh reads them, and the agent socket.
type sshEnv struct {
	home      string
	localUser string
	configs   []string
	authSock  string
}

// currentSSHEnv is this process's: $HOME (as every other file of ours),
// ~/.ssh/config then /etc/ssh/ssh_config, $SSH_AUTH_SOCK.
func currentSSHEnv() sshEnv {
	home, _ := os.UserHomeDir()
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return sshEnv{
		home:      home,
		localUser: name,
		configs:   []string{filepath.Join(home, ".ssh", "config"), "/etc/ssh/ssh_config"},
		authSock:  os.Getenv("SSH_AUTH_SOCK"),
	}
}

// sshTarget is an ssh remote resolved as ssh resolves it: the remote's
// user and port win over ~/.ssh/config's User and Port, which win over
// the local user name and 22; HostName replaces an alias.
type sshTarget struct {
	remote     sshRemote
	cfg        sshHostConfig
	user       string
	host       string // HostName, or the host as written
	port       string
	knownHosts []string // the files ssh would check, expanded
	userKnown  string   // the first user known_hosts file, for messages
}

func resolveSSH(remote string, env sshEnv) (*sshTarget, error) {
	r, err := parseSSHRemote(remote)
	if err != nil {
		return nil, err
	}
	cfg, err := lookupSSHConfig(env.configs, r.Host, env.home, env.localUser)
	if err != nil {
		return nil, fmt.Errorf("remote %s: %w", Redact(remote), err)
	}
	if cfg.Proxy != "" {
		return nil, fmt.Errorf("remote %s: ~/.ssh/config reaches %s through %q, which sync cannot use: give a remote it can dial directly", Redact(remote), r.Host, cfg.Proxy)
	}
	t := &sshTarget{remote: r, cfg: cfg, user: r.User, host: r.Host, port: r.Port}
	if cfg.HostName != "" {
		t.host = strings.ReplaceAll(strings.ReplaceAll(cfg.HostName, "%h", r.Host), "%%", "%")
	}
	if t.user == "" {
		t.user = cfg.User
	}
	if t.user == "" {
		t.user = env.localUser
	}
	if t.port == "" {
		t.port = cfg.Port
	}
	if t.port == "" {
		t.port = "22"
	}
	tk := t.tokens(env)
	userFiles := cfg.UserKnownHosts
	if userFiles == nil {
		userFiles = []string{"~/.ssh/known_hosts", "~/.ssh/known_hosts2"}
	}
	globalFiles := cfg.GlobalKnownHosts
	if globalFiles == nil {
		globalFiles = []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}
	}
	for i, f := range append(append([]string{}, userFiles...), globalFiles...) {
		if strings.EqualFold(f, "none") {
			continue
		}
		p, err := expandSSHPath(f, tk)
		if err != nil {
			return nil, fmt.Errorf("remote %s: known_hosts file in ssh config: %w", Redact(remote), err)
		}
		if i == 0 {
			t.userKnown = p
		}
		t.knownHosts = append(t.knownHosts, p)
	}
	return t, nil
}

func (t *sshTarget) tokens(env sshEnv) sshTokens {
	return sshTokens{home: env.home, hostName: t.host, alias: t.remote.Host, port: t.port, remoteUser: t.user, localUser: env.localUser}
}

// addr is host:port as known_hosts and the dialer name it.
func (t *sshTarget) addr() string { return net.JoinHostPort(t.host, t.port) }

// sshCommand is the ssh command that reaches the same host as the
// remote: what the user runs to record a host key. It names the host as
// the remote does, so ~/.ssh/config applies to it as to us.
func (t *sshTarget) sshCommand() string {
	cmd := "ssh "
	if t.remote.Port != "" {
		cmd += "-p " + t.remote.Port + " "
	}
	if t.remote.User != "" {
		cmd += t.remote.User + "@"
	}
	return cmd + t.remote.Host
}

// sshMethod authenticates as ssh does, without ever prompting: every key
// of the agent and every identity file (IdentityFile from ssh_config, else
// the default ~/.ssh/id_rsa, id_ecdsa and id_ed25519), offered in one
// public-key exchange, with IdentitiesOnly honoured; host keys checked
// against known_hosts with the host key algorithms restricted to those
// recorded for the host, as ssh does, so a known_hosts holding only the
// host's ED25519 key (what `ssh host` records) is enough.
type sshMethod struct {
	t       *sshTarget
	home    string
	signers []ssh.Signer
	offered []string // what each signer is, for the refusal message
	skipped []string // identities that could not be offered, and why

	mu      sync.Mutex
	hostErr error // what the last host key check said
	algos   []string
}

var _ gitssh.AuthMethod = (*sshMethod)(nil)

// sshAuth resolves an ssh remote and gathers its identities. No identity
// at all is an error here, before any connection.
func sshAuth(remote string, env sshEnv) (*sshMethod, error) {
	t, err := resolveSSH(remote, env)
	if err != nil {
		return nil, err
	}
	m := &sshMethod{t: t, home: env.home}
	if err := m.gatherIdentities(env); err != nil {
		return nil, fmt.Errorf("remote %s: %w", Redact(remote), err)
	}
	if len(m.signers) == 0 {
		var why []string
		switch {
		case m.agentSock(env) == "":
			why = append(why, "no ssh agent (SSH_AUTH_SOCK)")
		default:
			why = append(why, "the ssh agent holds no usable key")
		}
		if len(t.cfg.IdentityFiles) == 0 {
			why = append(why, "no unencrypted key in ~/.ssh (id_ed25519, id_ecdsa, id_rsa)")
		}
		why = append(why, m.skipped...)
		return nil, fmt.Errorf("remote %s: no ssh key to offer: %s", Redact(remote), strings.Join(why, "; "))
	}
	return m, nil
}

func (m *sshMethod) agentSock(env sshEnv) string {
	switch a := m.t.cfg.IdentityAgent; {
	case a == "":
		return env.authSock
	case strings.EqualFold(a, "none"):
		return ""
	case a == "SSH_AUTH_SOCK":
		return env.authSock
	case strings.HasPrefix(a, "$") && !strings.HasPrefix(a, "${"):
		return os.Getenv(a[1:])
	default:
		p, err := expandSSHPath(a, m.t.tokens(env))
		if err != nil {
			return ""
		}
		return p
	}
}

// identityFile is one identity file: its key if it could be read without
// a passphrase, else its public key (from the .pub beside it) so an agent
// holding it can stand in.
type identityFile struct {
	path   string
	signer ssh.Signer
	pub    ssh.PublicKey
	why    string // why it cannot be offered by itself
}

func (m *sshMethod) gatherIdentities(env sshEnv) error {
	files := m.t.cfg.IdentityFiles
	explicit := len(files) > 0
	if !explicit {
		// ssh's defaults, in ssh's order (security keys need the agent).
		files = []string{"~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ed25519"}
	}
	var ids []identityFile
	for _, f := range files {
		if strings.EqualFold(f, "none") {
			continue
		}
		p, err := expandSSHPath(f, m.t.tokens(env))
		if err != nil {
			return fmt.Errorf("IdentityFile in ssh config: %w", err)
		}
		id := readIdentity(p)
		if id.why == "no such file" && !explicit {
			continue // a default key that does not exist is no news
		}
		ids = append(ids, id)
	}

	agentKeys, agentErr := listAgent(m.agentSock(env))
	if agentErr != nil {
		m.skipped = append(m.skipped, agentErr.Error())
	}
	inAgent := func(pub ssh.PublicKey) (agentSigner, bool) {
		for _, a := range agentKeys {
			if pub != nil && bytes.Equal(a.pub.Marshal(), pub.Marshal()) {
				return a, true
			}
		}
		return agentSigner{}, false
	}
	seen := map[string]bool{}
	add := func(s ssh.Signer, what string) {
		k := string(s.PublicKey().Marshal())
		if seen[k] {
			return
		}
		seen[k] = true
		m.signers = append(m.signers, s)
		m.offered = append(m.offered, what)
	}
	if !m.t.cfg.IdentitiesOnly {
		for _, a := range agentKeys {
			add(a, "agent key "+a.describe())
		}
	}
	for _, id := range ids {
		short := m.short(id.path)
		if a, ok := inAgent(id.pub); ok {
			add(a, "agent key "+a.describe())
			continue
		}
		if id.signer != nil {
			add(id.signer, short)
			continue
		}
		why := id.why
		if why == "encrypted" {
			why = "encrypted and not in the agent: add it with ssh-add"
		}
		m.skipped = append(m.skipped, short+" "+why)
	}
	return nil
}

// readIdentity reads a private key file without prompting for anything.
func readIdentity(path string) identityFile {
	id := identityFile{path: path}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			id.why = "no such file"
		} else {
			id.why = "unreadable: " + err.Error()
		}
		return id
	}
	if pubData, err := os.ReadFile(path + ".pub"); err == nil {
		if pub, _, _, _, err := ssh.ParseAuthorizedKey(pubData); err == nil {
			id.pub = pub
		}
	}
	s, err := ssh.ParsePrivateKey(data)
	var pm *ssh.PassphraseMissingError
	switch {
	case err == nil:
		id.signer, id.pub = s, s.PublicKey()
	case errors.As(err, &pm):
		id.why = "encrypted"
		if pm.PublicKey != nil {
			id.pub = pm.PublicKey
		}
	default:
		id.why = "not a private key we can read (" + err.Error() + ")"
	}
	return id
}

func (m *sshMethod) short(p string) string {
	if m.home != "" && strings.HasPrefix(p, m.home+string(filepath.Separator)) {
		return "~" + p[len(m.home):]
	}
	return p
}

// agentSigner signs through the agent at sock, dialling it per signature
// so no connection outlives a sync (the MCP server lives long).
type agentSigner struct {
	sock    string
	pub     ssh.PublicKey
	comment string
}

var _ ssh.AlgorithmSigner = agentSigner{}

func (a agentSigner) PublicKey() ssh.PublicKey { return a.pub }

func (a agentSigner) Sign(r io.Reader, data []byte) (*ssh.Signature, error) {
	return a.SignWithAlgorithm(r, data, "")
}

func (a agentSigner) SignWithAlgorithm(_ io.Reader, data []byte, algo string) (*ssh.Signature, error) {
	conn, err := net.DialTimeout("unix", a.sock, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("ssh agent: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second)) // an agent may ask its user to confirm
	var flags agent.SignatureFlags
	switch algo {
	case ssh.KeyAlgoRSASHA256:
		flags = agent.SignatureFlagRsaSha256
	case ssh.KeyAlgoRSASHA512:
		flags = agent.SignatureFlagRsaSha512
	}
	return agent.NewClient(conn).SignWithFlags(a.pub, data, flags)
}

func (a agentSigner) describe() string {
	s := a.pub.Type() + " " + ssh.FingerprintSHA256(a.pub)
	if a.comment != "" {
		s += " (" + a.comment + ")"
	}
	return s
}

// listAgent returns the agent's keys; no socket is no agent, not an error.
func listAgent(sock string) ([]agentSigner, error) {
	if sock == "" {
		return nil, nil
	}
	conn, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("ssh agent %s unreachable (%v)", sock, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	keys, err := agent.NewClient(conn).List()
	if err != nil {
		return nil, fmt.Errorf("ssh agent %s: %v", sock, err)
	}
	var out []agentSigner
	for _, k := range keys {
		pub, err := ssh.ParsePublicKey(k.Blob)
		if err != nil {
			continue
		}
		out = append(out, agentSigner{sock: sock, pub: pub, comment: k.Comment})
	}
	return out, nil
}

func (m *sshMethod) Name() string { return gitssh.PublicKeysCallbackName }

func (m *sshMethod) String() string {
	return fmt.Sprintf("user: %s, name: %s", m.t.user, m.Name())
}

// ClientConfig is called by go-git for each connection. It reads
// known_hosts afresh and restricts the host key algorithms to the types
// recorded for host:port (go-git v5 leaves them empty once a host key
// callback is given, go-git#1551, and the server then shows a key type
// known_hosts does not hold: "knownhosts: key mismatch").
func (m *sshMethod) ClientConfig() (*ssh.ClientConfig, error) {
	var files []string
	for _, f := range m.t.knownHosts {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	check := func(string, net.Addr, ssh.PublicKey) error { return &knownhosts.KeyError{} }
	var algos []string
	if len(files) > 0 {
		db, err := gitssh.NewKnownHostsDb(files...)
		if err != nil {
			return nil, fmt.Errorf("read known_hosts: %w", err)
		}
		check, algos = db.HostKeyCallback(), db.HostKeyAlgorithms(m.t.addr())
	}
	m.mu.Lock()
	m.hostErr, m.algos = nil, algos
	m.mu.Unlock()
	return &ssh.ClientConfig{
		User: m.t.user,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(m.signers...)},
		HostKeyCallback: func(host string, remote net.Addr, key ssh.PublicKey) error {
			err := check(host, remote, key)
			m.mu.Lock()
			m.hostErr = err
			m.mu.Unlock()
			return err
		},
		HostKeyAlgorithms: algos,
		Timeout:           15 * time.Second,
	}, nil
}

// explain turns what an ssh connection failed with into one line that
// says what to do: an unknown host, a changed host key, or keys the
// server refused. Other errors pass unchanged.
func (m *sshMethod) explain(err error) error {
	if err == nil {
		return nil
	}
	m.mu.Lock()
	hostErr, algos := m.hostErr, m.algos
	m.mu.Unlock()
	t := m.t
	known := m.short(t.userKnown)
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case errors.As(hostErr, &ke) && len(ke.Want) == 0:
		return fmt.Errorf("host key of %s is not in %s: run `%s` once to check and record it", t.addr(), known, t.sshCommand())
	case errors.As(hostErr, &ke):
		w := ke.Want[0]
		return fmt.Errorf("the host key of %s CHANGED: it is not the %s key recorded in %s:%d (a reinstalled server, or someone intercepting the connection); if you know why, remove the old key with `%s` and run `%s` once to record the new one",
			t.addr(), w.Key.Type(), m.short(w.Filename), w.Line, m.removeCommand(w.Filename), t.sshCommand())
	case errors.As(hostErr, &re):
		return fmt.Errorf("the host key of %s is marked @revoked in %s: do not connect to it", t.addr(), m.short(re.Revoked.Filename))
	case hostErr == nil && len(algos) > 0 && strings.Contains(err.Error(), "no common algorithm for host key"):
		return fmt.Errorf("the host key of %s CHANGED: the server offers none of the key types recorded in %s (%s); if you know why, remove the old keys with `%s` and run `%s` once to record the new one",
			t.addr(), known, strings.Join(algos, ", "), m.removeCommand(t.userKnown), t.sshCommand())
	case strings.Contains(strings.ToLower(err.Error()), "too many authentication failures"):
		return fmt.Errorf("the server for %s@%s hung up after too many refused keys (offered: %s): name the right key with IdentityFile and set IdentitiesOnly yes for this host in ~/.ssh/config",
			t.user, t.addr(), strings.Join(m.offered, ", "))
	case strings.Contains(err.Error(), "unable to authenticate"):
		tried := strings.Join(m.offered, ", ")
		if len(m.skipped) > 0 {
			tried += "; not offered: " + strings.Join(m.skipped, ", ")
		}
		return fmt.Errorf("the server refused every key tried for %s@%s (%s): add your public key to ~/.ssh/authorized_keys of %s on the server, or name the right key with IdentityFile in ~/.ssh/config",
			t.user, t.addr(), tried, t.user)
	}
	return err
}

// removeCommand is the ssh-keygen line that removes host's keys from file.
func (m *sshMethod) removeCommand(file string) string {
	name := m.t.host
	if m.t.port != "22" {
		name = "[" + m.t.host + "]:" + m.t.port
	}
	cmd := "ssh-keygen -R '" + name + "'"
	if file != "" && file != filepath.Join(m.home, ".ssh", "known_hosts") {
		cmd += " -f " + m.short(file)
	}
	return cmd
}

// dialURL is the remote go-git must dial: the resolved user, host and
// port, and the path as git would send it.
func (m *sshMethod) dialURL() (string, error) {
	return sshDialURL(m.t.user, m.t.host, m.t.port, m.t.remote.Path)
}
