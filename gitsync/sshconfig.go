package gitsync

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// sshHostConfig is what ssh_config(5) files say about one host, for the
// keywords that decide where, as whom and with which keys and known_hosts
// files ssh connects. As in ssh, the first value obtained for a keyword
// wins, except IdentityFile, which accumulates. Values are as written:
// tokens and ~ are expanded once the user and port are known.
type sshHostConfig struct {
	HostName         string
	User             string
	Port             string
	IdentityFiles    []string
	IdentitiesOnly   bool
	IdentityAgent    string
	UserKnownHosts   []string
	GlobalKnownHosts []string
	// Proxy is a ProxyJump or ProxyCommand line: sync dials the host
	// itself, so a host reachable only through a proxy is refused with a
	// clear message rather than dialled directly.
	Proxy string
	set   map[string]bool
}

// sshConfigLookup reads ssh_config files for one host the way ssh does:
// the user's file, then the system's; Host and Match blocks; Include.
// Match supports all, host, originalhost, user and localuser; criteria
// that need more than the config (exec, canonical, final, localnetwork,
// tagged) never match, since running commands or resolving names is not
// ours to do.
type sshConfigLookup struct {
	alias     string // the host as written in the remote, lower-cased as ssh does
	home      string
	localUser string
	out       sshHostConfig
}

// maxIncludeDepth bounds Include recursion, as ssh does (READCONF_MAX_DEPTH).
const maxIncludeDepth = 16

// lookupSSHConfig returns the settings files give for alias. files are
// read in order (the user's config first); a missing file is no error,
// an unreadable or malformed one is, naming the file and line.
func lookupSSHConfig(files []string, alias, home, localUser string) (sshHostConfig, error) {
	l := &sshConfigLookup{alias: strings.ToLower(alias), home: home, localUser: localUser}
	l.out.set = map[string]bool{}
	for i, f := range files {
		if err := l.readFile(f, i > 0, true, 0); err != nil {
			return sshHostConfig{}, err
		}
	}
	return l.out, nil
}

func (l *sshConfigLookup) readFile(path string, system, active bool, depth int) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && depth == 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read ssh config: %w", err)
	}
	// An Include inside an inactive block is read but can set nothing,
	// as ssh's SSHCONF_NEVERMATCH.
	never := !active
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		kw, args, err := splitSSHConfigLine(sc.Text())
		if err != nil {
			return fmt.Errorf("ssh config %s:%d: %w", path, n, err)
		}
		if kw == "" {
			continue
		}
		switch kw {
		case "host":
			active = !never && sshHostMatches(l.alias, args)
		case "match":
			m, err := l.match(args)
			if err != nil {
				return fmt.Errorf("ssh config %s:%d: %w", path, n, err)
			}
			active = !never && m
		case "include":
			if depth+1 > maxIncludeDepth {
				return fmt.Errorf("ssh config %s:%d: Include nested more than %d deep", path, n, maxIncludeDepth)
			}
			for _, a := range args {
				pat := expandTilde(a, l.home)
				if !filepath.IsAbs(pat) {
					if system {
						pat = filepath.Join("/etc/ssh", pat)
					} else {
						pat = filepath.Join(l.home, ".ssh", pat)
					}
				}
				matches, err := filepath.Glob(pat)
				if err != nil {
					return fmt.Errorf("ssh config %s:%d: Include %q: %w", path, n, a, err)
				}
				for _, m := range matches {
					if err := l.readFile(m, system, active, depth+1); err != nil {
						return err
					}
				}
			}
		default:
			if active {
				l.setOption(kw, args)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read ssh config %s: %w", path, err)
	}
	return nil
}

func (l *sshConfigLookup) setOption(kw string, args []string) {
	o := &l.out
	if kw == "identityfile" {
		if len(args) > 0 {
			o.IdentityFiles = append(o.IdentityFiles, args[0])
		}
		return
	}
	switch kw {
	case "hostname", "user", "port", "identitiesonly", "identityagent", "userknownhostsfile",
		"globalknownhostsfile", "proxyjump", "proxycommand":
	default:
		return
	}
	if o.set[kw] || len(args) == 0 {
		return
	}
	// ProxyJump and ProxyCommand share ssh's first-wins slot.
	if (kw == "proxyjump" || kw == "proxycommand") && (o.set["proxyjump"] || o.set["proxycommand"]) {
		return
	}
	o.set[kw] = true
	switch kw {
	case "hostname":
		o.HostName = args[0]
	case "user":
		o.User = args[0]
	case "port":
		o.Port = args[0]
	case "identitiesonly":
		o.IdentitiesOnly = strings.EqualFold(args[0], "yes")
	case "identityagent":
		o.IdentityAgent = args[0]
	case "userknownhostsfile":
		o.UserKnownHosts = args
	case "globalknownhostsfile":
		o.GlobalKnownHosts = args
	case "proxyjump", "proxycommand":
		if !strings.EqualFold(args[0], "none") {
			o.Proxy = kw + " " + strings.Join(args, " ")
		}
	}
}

// match evaluates a Match line's criteria (all must hold).
func (l *sshConfigLookup) match(args []string) (bool, error) {
	ok := true
	for i := 0; i < len(args); i++ {
		crit := strings.ToLower(args[i])
		neg := strings.HasPrefix(crit, "!")
		crit = strings.TrimPrefix(crit, "!")
		var r bool
		switch crit {
		case "all":
			r = true
		case "canonical", "final":
			r = false
		case "host", "originalhost", "user", "localuser", "exec", "localnetwork", "tagged":
			if i+1 >= len(args) {
				return false, fmt.Errorf("ssh config: Match %s needs an argument", crit)
			}
			i++
			list := args[i]
			switch crit {
			case "host":
				h := l.alias
				if l.out.HostName != "" {
					h = strings.ToLower(strings.ReplaceAll(l.out.HostName, "%h", l.alias))
				}
				r = sshPatternList(h, list)
			case "originalhost":
				r = sshPatternList(l.alias, list)
			case "user":
				u := l.out.User
				if u == "" {
					u = l.localUser
				}
				r = sshPatternList(u, list)
			case "localuser":
				r = sshPatternList(l.localUser, list)
			default:
				r = false
			}
		default:
			return false, fmt.Errorf("unsupported Match criterion %q", args[i])
		}
		if neg {
			r = !r
		}
		ok = ok && r
	}
	return ok, nil
}

// sshHostMatches is a Host line: some pattern matches and no negated one
// does.
func sshHostMatches(host string, patterns []string) bool {
	matched := false
	for _, p := range patterns {
		if neg, ok := strings.CutPrefix(p, "!"); ok {
			if sshPattern(host, strings.ToLower(neg)) {
				return false
			}
			continue
		}
		if sshPattern(host, strings.ToLower(p)) {
			matched = true
		}
	}
	return matched
}

// sshPatternList is a comma-separated pattern list (Match arguments).
func sshPatternList(s, list string) bool {
	return sshHostMatches(strings.ToLower(s), strings.Split(list, ","))
}

// sshPattern matches s against a glob with * and ?, as ssh's match_pattern.
func sshPattern(s, p string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			if p == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if sshPattern(s[i:], p) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
			s, p = s[1:], p[1:]
		default:
			if s == "" || s[0] != p[0] {
				return false
			}
			s, p = s[1:], p[1:]
		}
	}
	return s == ""
}

// splitSSHConfigLine returns a line's lower-cased keyword and its
// arguments: "Keyword value", "Keyword=value", double-quoted arguments,
// and comments from an unquoted # on. An empty keyword is a blank or
// comment line.
func splitSSHConfigLine(line string) (string, []string, error) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", nil, nil
	}
	end := strings.IndexAny(line, " \t=")
	if end < 0 {
		return strings.ToLower(line), nil, nil
	}
	kw := strings.ToLower(line[:end])
	rest := strings.TrimLeft(line[end:], " \t")
	if strings.HasPrefix(rest, "=") {
		rest = strings.TrimLeft(rest[1:], " \t")
	}
	var args []string
	for rest != "" {
		if rest[0] == '#' {
			break
		}
		var arg string
		if rest[0] == '"' {
			i := strings.IndexByte(rest[1:], '"')
			if i < 0 {
				return "", nil, fmt.Errorf("%s: unterminated quote", kw)
			}
			arg, rest = rest[1:i+1], rest[i+2:]
		} else {
			i := strings.IndexAny(rest, " \t")
			if i < 0 {
				i = len(rest)
			}
			arg, rest = rest[:i], rest[i:]
		}
		args = append(args, arg)
		rest = strings.TrimLeft(rest, " \t")
	}
	return kw, args, nil
}

// expandTilde replaces a leading ~ or ~user as ssh does.
func expandTilde(p, home string) string {
	if p == "~" {
		return home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(home, p[2:])
	}
	if strings.HasPrefix(p, "~") {
		name, rest, _ := strings.Cut(p[1:], "/")
		if u, err := user.Lookup(name); err == nil {
			return filepath.Join(u.HomeDir, rest)
		}
	}
	return p
}

// sshTokens are the values of ssh_config's % tokens for one connection.
type sshTokens struct {
	home, hostName, alias, port, remoteUser, localUser string
}

// expandSSHPath expands ~, ${VAR} and the % tokens ssh accepts in
// IdentityFile, UserKnownHostsFile and IdentityAgent (%% %d %h %i %L %l
// %n %p %r %u). An unknown token is an error, as in ssh.
func expandSSHPath(p string, tk sshTokens) (string, error) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '%' && i+1 < len(p):
			i++
			switch p[i] {
			case '%':
				b.WriteByte('%')
			case 'd':
				b.WriteString(tk.home)
			case 'h':
				b.WriteString(tk.hostName)
			case 'i':
				b.WriteString(strconv.Itoa(os.Getuid()))
			case 'L', 'l':
				h, _ := os.Hostname()
				if p[i] == 'L' {
					h, _, _ = strings.Cut(h, ".")
				}
				b.WriteString(h)
			case 'n':
				b.WriteString(tk.alias)
			case 'p':
				b.WriteString(tk.port)
			case 'r':
				b.WriteString(tk.remoteUser)
			case 'u':
				b.WriteString(tk.localUser)
			default:
				return "", fmt.Errorf("%q: unknown token %%%c", p, p[i])
			}
		case c == '%':
			return "", fmt.Errorf("%q: lone %% at the end", p)
		case c == '$' && i+1 < len(p) && p[i+1] == '{':
			end := strings.IndexByte(p[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("%q: unterminated ${", p)
			}
			name := p[i+2 : i+end]
			v, ok := os.LookupEnv(name)
			if !ok {
				return "", fmt.Errorf("%q: environment variable %s is not set", p, name)
			}
			b.WriteString(v)
			i += end
		default:
			b.WriteByte(c)
		}
	}
	return expandTilde(b.String(), tk.home), nil
}
