package gitsync

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// sshRemote is an ssh remote as git reads it (connect.c): the host as
// written (it may be a Host alias of ~/.ssh/config), the user and port
// when the remote gives them, and the path git-upload-pack is asked for.
type sshRemote struct {
	User string
	Host string
	Port string
	Path string
}

// isSSHURL reports the URL schemes git sends over ssh.
func isSSHURL(remote string) bool {
	scheme, _, ok := strings.Cut(remote, "://")
	if !ok {
		return false
	}
	switch strings.ToLower(scheme) {
	case "ssh", "git+ssh", "ssh+git":
		return true
	}
	return false
}

// isSCPLike reports git's scp-like syntax, [user@]host:path: a colon
// before any slash, and no URL scheme.
func isSCPLike(remote string) bool {
	if strings.Contains(remote, "://") {
		return false
	}
	colon := strings.IndexByte(remote, ':')
	if strings.HasPrefix(remote, "[") {
		if end := strings.Index(remote, "]:"); end > 0 {
			colon = end + 1
		}
	}
	return colon > 0 && !strings.Contains(remote[:colon], "/")
}

// parseSSHRemote reads ssh://[user@]host[:port]/path (also git+ssh://)
// and [user@]host:path as git does: in a URL a path starting with /~ is
// home-relative ("/~/memory.git" asks for "~/memory.git"); in the
// scp-like form the path is sent as written, so "memory.git" is relative
// to the login directory and "~/memory.git" to the home, both resolved
// by git-upload-pack on the server. "[user@host:port]:path" gives a port
// in the scp-like form, as git allows.
func parseSSHRemote(remote string) (sshRemote, error) {
	var r sshRemote
	switch {
	case isSSHURL(remote):
		u, err := url.Parse(remote)
		if err != nil {
			return r, fmt.Errorf("ssh remote %s: %w", Redact(remote), err)
		}
		if u.User != nil {
			r.User = u.User.Username()
		}
		r.Host, r.Port, r.Path = u.Hostname(), u.Port(), u.Path
		if strings.HasPrefix(r.Path, "/~") {
			r.Path = r.Path[1:]
		}
	case isSCPLike(remote):
		var hostPart string
		if strings.HasPrefix(remote, "[") && strings.Contains(remote, "]:") {
			end := strings.Index(remote, "]:")
			hostPart, r.Path = remote[1:end], remote[end+2:]
			// Inside brackets: [user@]host[:port], or an IPv6 address.
			at := strings.LastIndexByte(hostPart, '@')
			hp := hostPart[at+1:]
			if strings.Count(hp, ":") == 1 {
				h, p, _ := strings.Cut(hp, ":")
				hostPart, r.Port = hostPart[:at+1]+h, p
			}
		} else {
			hostPart, r.Path, _ = strings.Cut(remote, ":")
		}
		if at := strings.LastIndexByte(hostPart, '@'); at >= 0 {
			r.User, hostPart = hostPart[:at], hostPart[at+1:]
		}
		r.Host = hostPart
	default:
		return r, fmt.Errorf("%s is not an ssh remote (ssh://host/path or host:path)", Redact(remote))
	}
	if r.Host == "" {
		return r, fmt.Errorf("ssh remote %s has no host", Redact(remote))
	}
	if r.Path == "" || r.Path == "/" {
		return r, fmt.Errorf("ssh remote %s has no repository path", Redact(remote))
	}
	if r.Port != "" {
		if n, err := strconv.Atoi(r.Port); err != nil || n < 1 || n > 65535 {
			return r, fmt.Errorf("ssh remote %s: port %q is not a number", Redact(remote), r.Port)
		}
	}
	return r, nil
}

// sshDialURL is the remote as go-git must be given it to reach user at
// host:port and ask for path. go-git sends the path of an ssh:// URL as
// it is (so "/~/x" would name a directory "~" at the root), and accepts
// "user@host:port:path" for paths that are not absolute.
func sshDialURL(user, host, port, path string) (string, error) {
	if strings.HasPrefix(path, "/") {
		u := url.URL{Scheme: "ssh", User: url.User(user), Host: net.JoinHostPort(host, port), Path: path}
		return u.String(), nil
	}
	if strings.ContainsAny(host, ":[]") || strings.Contains(user, "@") {
		return "", fmt.Errorf("cannot reach %s@%s with a path relative to the home directory: give an absolute path (ssh://%s/PATH)", user, host, net.JoinHostPort(host, port))
	}
	return user + "@" + host + ":" + port + ":" + path, nil
}
