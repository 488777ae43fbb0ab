package gitsync

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	nethttp "net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
)

// Redact returns a remote (or a list of them, or any text) as it may be
// shown: a password in a URL becomes *** (https://user:***@host/path).
// For http(s), a user name without a password is hidden too
// (https://***@host/path): hosts accept a token in that place. Every
// query value and the fragment of a URL are hidden as well
// (https://host/r.git?token=***&ref=***#***): a token travels as
// ?token=, ?access_token=, ?private_token=, ?key=, a signature or any
// name a host chose, so no list of secret names is complete, and a git
// remote has no query worth reading on screen (keys stay, so the user
// still sees which parameters are set). Paths, scp-style ssh remotes
// (git@host:path) and URLs without credentials or query come back
// unchanged. Redact(Redact(x)) == Redact(x).
func Redact(remote string) string {
	out := urlWithUserinfo().ReplaceAllStringFunc(remote, func(m string) string {
		scheme, userinfo, _ := strings.Cut(strings.TrimSuffix(m, "@"), "://")
		return scheme + "://" + redactUserinfo(scheme, userinfo) + "@"
	})
	return urlWithQuery().ReplaceAllStringFunc(out, redactQuery)
}

// urlWithQuery matches a URL that has a query or a fragment, from its
// scheme to the end of the query and fragment.
var urlWithQuery = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s?#"'<>]*[?#][^\s"'<>]*`)
})

// nextScheme finds ",scheme://" in s (the next remote of a list such as
// peers:URL,URL), returning the index of the comma or -1.
var nextScheme = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`,[A-Za-z][A-Za-z0-9+.-]*://`)
})

// redactQuery hides the values of a URL's query and its fragment; a
// further URL after a comma is redacted on its own.
func redactQuery(m string) string {
	i := strings.IndexAny(m, "?#")
	head, tail, rest := m[:i], m[i:], ""
	if loc := nextScheme().FindStringIndex(tail); loc != nil {
		tail, rest = tail[:loc[0]], tail[loc[0]:]
	}
	var b strings.Builder
	b.WriteString(head)
	query, frag, hasFrag := "", "", false
	if tail[0] == '?' {
		query, frag, hasFrag = strings.Cut(tail[1:], "#")
		b.WriteByte('?')
		for j, part := range strings.Split(query, "&") {
			if j > 0 {
				b.WriteByte('&')
			}
			if k, _, ok := strings.Cut(part, "="); ok {
				b.WriteString(k + "=***")
			} else if part != "" {
				b.WriteString("***")
			}
		}
	} else {
		frag, hasFrag = tail[1:], true
	}
	if hasFrag {
		b.WriteByte('#')
		if frag != "" {
			b.WriteString("***")
		}
	}
	if rest != "" {
		b.WriteString(urlWithQuery().ReplaceAllStringFunc(rest, redactQuery))
	}
	return b.String()
}

// urlWithUserinfo matches the scheme and user information of a URL: up
// to the last @ before the path, so a password holding a raw @ is
// covered whole. Compiled on first use, not in every hook process.
var urlWithUserinfo = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#"'<>]+@`)
})

// splitUserinfo cuts scheme://USERINFO@rest; ok is false for anything
// without user information.
func splitUserinfo(remote string) (scheme, userinfo, rest string, ok bool) {
	scheme, after, found := strings.Cut(remote, "://")
	if !found {
		return "", "", "", false
	}
	end := strings.IndexAny(after, "/?#")
	if end < 0 {
		end = len(after)
	}
	at := strings.LastIndex(after[:end], "@")
	if at < 0 {
		return "", "", "", false
	}
	return scheme, after[:at], after[at+1:], true
}

func redactUserinfo(scheme, userinfo string) string {
	user, _, hasPass := strings.Cut(userinfo, ":")
	switch {
	case hasPass:
		return user + ":***"
	case isHTTP(scheme):
		return "***"
	}
	return userinfo
}

// withoutSecret is the remote as .git/config may keep it, a file any
// local user can read and git tools print: for http(s) without any user
// information (credentials come from where the user keeps them), for
// other schemes without a password (an ssh user name is no secret), and
// for every URL without its query and fragment, where hosts put tokens
// too (?private_token=...). The query still has to reach an http(s)
// server: remoteQuery and queryTransport carry it on each request, from
// the remote as the user configured it.
func withoutSecret(remote string) string {
	remote = withoutQuery(remote)
	scheme, userinfo, rest, ok := splitUserinfo(remote)
	if !ok {
		return remote
	}
	if isHTTP(scheme) {
		return scheme + "://" + rest
	}
	user, _, _ := strings.Cut(userinfo, ":")
	return scheme + "://" + user + "@" + rest
}

// withoutQuery cuts a URL's query and fragment; paths and scp-style
// remotes (no "://") are left alone, as git reads them literally.
func withoutQuery(remote string) string {
	_, after, ok := strings.Cut(remote, "://")
	if !ok {
		return remote
	}
	if i := strings.IndexAny(after, "?#"); i >= 0 {
		return remote[:len(remote)-len(after)+i]
	}
	return remote
}

// remoteQuery is the raw query of an http(s) remote ("" when it has
// none): what queryTransport adds to each request.
func remoteQuery(remote string) string {
	u, err := url.Parse(remote)
	if err != nil || !isHTTP(u.Scheme) {
		return ""
	}
	return u.RawQuery
}

// queryTransport sends a remote's query with every request to the
// remote's host. go-git cannot carry it in the endpoint: it builds
// request URLs as endpoint + "/info/refs?service=...", so a query in the
// endpoint ends up before the path's tail (r.git?token=x/info/refs?...)
// and the server sees neither. Other hosts (a redirect elsewhere) are not
// sent it.
type queryTransport struct {
	base  nethttp.RoundTripper
	host  string // host[:port] of the remote
	query string // raw, as the user wrote it
}

// withRemoteQuery wraps base so that requests carry remote's query; it
// returns base itself when remote has none.
func withRemoteQuery(base nethttp.RoundTripper, remote string) nethttp.RoundTripper {
	q := remoteQuery(remote)
	if q == "" {
		return base
	}
	u, err := url.Parse(remote)
	if err != nil {
		return base
	}
	return &queryTransport{base: base, host: u.Host, query: q}
}

func (t *queryTransport) RoundTrip(req *nethttp.Request) (*nethttp.Response, error) {
	if !strings.EqualFold(req.URL.Host, t.host) {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context()) // a RoundTripper must not change the caller's request
	if r.URL.RawQuery == "" {
		r.URL.RawQuery = t.query
	} else {
		r.URL.RawQuery = t.query + "&" + r.URL.RawQuery
	}
	return t.base.RoundTrip(r)
}

func isHTTP(scheme string) bool {
	s := strings.ToLower(scheme)
	return s == "http" || s == "https"
}

// redactText hides credentials in any text: user information of every
// URL in it, and the given secrets wherever they appear on their own.
func redactText(text string, secrets ...string) string {
	text = Redact(text)
	for _, s := range secrets {
		if len(s) >= 4 { // shorter strings would blank out ordinary words; no real token is that short
			text = strings.ReplaceAll(text, s, "***")
		}
	}
	return text
}

// secretsOf lists the password and the query values of a remote URL,
// decoded and as written, to be hidden wherever an error quotes them
// outside a URL.
func secretsOf(remote string) []string {
	var out []string
	if q := remoteQuery(remote); q != "" {
		for _, part := range strings.Split(q, "&") {
			_, v, _ := strings.Cut(part, "=")
			out = append(out, v)
			if d, err := url.QueryUnescape(v); err == nil && d != v {
				out = append(out, d)
			}
		}
	}
	if ep, err := transport.NewEndpoint(remote); err == nil && ep.Password != "" {
		out = append(out, ep.Password)
	}
	if _, userinfo, _, ok := splitUserinfo(remote); ok {
		if _, p, ok := strings.Cut(userinfo, ":"); ok && p != "" {
			out = append(out, p)
		}
	}
	return out
}

// redactedError carries an error whose text had credentials removed;
// errors.Is and errors.As still see the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr hides the credentials of the given remotes in err's text.
func redactErr(err error, remotes ...string) error {
	if err == nil {
		return nil
	}
	var secrets []string
	for _, r := range remotes {
		secrets = append(secrets, secretsOf(r)...)
	}
	msg := redactText(err.Error(), secrets...)
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// AuthError is a remote refusing the credentials (or their absence). Its
// text is one line naming the redacted remote and where the credentials
// came from, never the server's answer (hosts send a whole HTML page).
type AuthError struct {
	Remote string // redacted
	Source string // where the credentials came from; "" if none were sent
	Denied bool   // 403: credentials accepted, access refused
}

func (e *AuthError) Error() string {
	from := "no credentials were sent"
	if e.Source != "" {
		from = "credentials from " + e.Source
	}
	what := "authentication failed"
	if e.Denied {
		what = "access denied"
	}
	return fmt.Sprintf("%s for %s (%s): check the token in config.json, ~/.netrc or your git credential helper", what, e.Remote, from)
}

// Unwrap lets callers test for go-git's sentinel without its message.
func (e *AuthError) Unwrap() error {
	if e.Denied {
		return transport.ErrAuthorizationFailed
	}
	return transport.ErrAuthenticationRequired
}

func isAuthFailure(err error) bool {
	return errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed)
}

// remoteAuth holds the credentials for one remote during one sync: from
// the URL, else ~/.netrc, else (only once the remote asked for them, as
// git does) from `git credential fill`.
type remoteAuth struct {
	remote string
	dir    string // where to run git, so repository credential settings apply
	method transport.AuthMethod
	source string
	http   bool
	filled map[string]string // what git credential fill answered
	asked  bool
	ssh    *sshMethod // for ssh remotes: explains refusals and host key failures
	url    string     // what go-git must dial, when not the remote as written
}

// dialURL is the URL fetch and push must use: for ssh, the remote with
// ~/.ssh/config applied (go-git does not read $HOME/.ssh/config for the
// user or keys); "" means the remote as configured.
func (a *remoteAuth) dialURL() string {
	if a == nil {
		return ""
	}
	return a.url
}

// newRemoteAuth picks credentials for a remote without ever prompting:
// for ssh every key of the agent and every identity file, with
// ~/.ssh/config applied and host keys checked against known_hosts (see
// sshMethod); for
// http(s) the user and password in the URL, else a matching ~/.netrc
// entry ($NETRC names another file, as for curl, which git uses). Local
// paths need none.
func newRemoteAuth(remote, dir string) (*remoteAuth, error) {
	a := &remoteAuth{remote: remote, dir: dir}
	ep, err := transport.NewEndpoint(remote)
	if err != nil {
		return nil, fmt.Errorf("remote %q is not a git URL or path: %w", Redact(remote), err)
	}
	switch ep.Protocol {
	case "ssh":
		m, err := sshAuth(remote, currentSSHEnv())
		if err != nil {
			return nil, err
		}
		if a.url, err = m.dialURL(); err != nil {
			return nil, fmt.Errorf("remote %s: %w", Redact(remote), err)
		}
		a.method, a.ssh, a.source = m, m, "ssh"
	case "http", "https":
		a.http = true
		switch {
		case ep.Password != "":
			a.method, a.source = &http.BasicAuth{Username: ep.User, Password: ep.Password}, "the remote URL"
		default:
			if login, pass, path, ok := netrcLookup(ep.Host, ep.User); ok {
				a.method, a.source = &http.BasicAuth{Username: login, Password: pass}, path
			} else if ep.User != "" {
				// A user name alone: sent as it is (a token in the user
				// name works on several hosts) until the remote refuses it.
				a.method, a.source = &http.BasicAuth{Username: ep.User}, "the remote URL"
			}
		}
	}
	return a, nil
}

// do runs op with the credentials. If the remote refuses and the
// credentials did not come with a password from the URL or ~/.netrc, it
// asks git's credential helpers once and runs op again; afterwards it
// tells the helpers whether their answer worked (approve or reject), as
// git does. A refusal becomes an AuthError.
// A nil remoteAuth sends no credentials.
func (a *remoteAuth) do(ctx context.Context, op func(transport.AuthMethod) error) error {
	if a == nil {
		return op(nil)
	}
	err := op(a.method)
	if isAuthFailure(err) && a.http && !a.asked && !a.hasPassword() {
		a.asked = true
		if cred := gitCredential(ctx, a.dir, "fill", credentialRequest(a.remote)); cred["password"] != "" {
			a.filled = cred
			a.method = &http.BasicAuth{Username: cred["username"], Password: cred["password"]}
			a.source = "git credential helper"
			err = op(a.method)
			switch {
			case err == nil:
				gitCredential(ctx, a.dir, "approve", cred)
			case isAuthFailure(err):
				gitCredential(ctx, a.dir, "reject", cred)
			}
		}
	}
	if a.ssh != nil {
		return a.ssh.explain(err)
	}
	if isAuthFailure(err) {
		return &AuthError{Remote: Redact(a.remote), Source: a.source, Denied: errors.Is(err, transport.ErrAuthorizationFailed) && a.method != nil}
	}
	return err
}

func (a *remoteAuth) hasPassword() bool {
	b, ok := a.method.(*http.BasicAuth)
	return ok && b.Password != ""
}

// credentialRequest is what `git credential fill` is asked for a remote:
// its URL without credentials, and the user name if the URL has one.
func credentialRequest(remote string) map[string]string {
	req := map[string]string{"url": withoutSecret(remote)}
	if ep, err := transport.NewEndpoint(remote); err == nil && ep.User != "" {
		req["username"] = ep.User
	}
	return req
}

// gitCredential runs `git credential ACTION` with attrs on stdin and
// returns what it printed (for fill). It never prompts: no terminal, no
// askpass program, Git Credential Manager non-interactive, and a
// deadline. A failure (no git, no helper, nothing stored) is an empty
// answer: the caller then reports the remote's refusal.
func gitCredential(ctx context.Context, dir, action string, attrs map[string]string) map[string]string {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var in bytes.Buffer
	for _, k := range []string{"protocol", "host", "path", "url", "username", "password"} {
		if v, ok := attrs[k]; ok && !strings.ContainsAny(v, "\n\x00") {
			fmt.Fprintf(&in, "%s=%s\n", k, v)
		}
	}
	in.WriteString("\n")
	cmd := exec.CommandContext(cctx, "git", "-c", "core.askPass=", "credential", action)
	cmd.Dir = dir
	cmd.Stdin = &in
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "GIT_ASKPASS" && k != "SSH_ASKPASS" {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=never")
	out, err := cmd.Output()
	if err != nil || action != "fill" {
		return nil
	}
	ans := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			ans[k] = v
		}
	}
	return ans
}

// netrcLookup finds credentials for host in the netrc file ($NETRC, else
// ~/.netrc) as curl does: the first "machine" entry for the host (names
// compared without case, ports ignored) whose login is the URL's user,
// if the URL names one, else the "default" entry.
func netrcLookup(host, user string) (login, password, path string, ok bool) {
	path = os.Getenv("NETRC")
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", "", "", false
		}
		path = filepath.Join(home, ".netrc")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", "", false
	}
	for _, e := range parseNetrc(string(data)) {
		if (e.machine == "" || strings.EqualFold(e.machine, host)) && (user == "" || e.login == user) && e.password != "" {
			return e.login, e.password, path, true
		}
	}
	return "", "", "", false
}

type netrcEntry struct{ machine, login, password string } // machine "" is the default entry

// parseNetrc reads the entries of a netrc file: "machine NAME" or
// "default", followed by "login", "password" (and "account", ignored),
// tokens separated by any white space, double-quoted tokens with
// backslash escapes; "macdef" bodies run to the next empty line. Default
// entries go last, whatever their place, as they only apply when no
// machine matches.
func parseNetrc(text string) []netrcEntry {
	toks := netrcTokens(text)
	var out, defaults []netrcEntry
	var cur *netrcEntry
	isDefault := false
	flush := func() {
		if cur != nil {
			if isDefault {
				defaults = append(defaults, *cur)
			} else {
				out = append(out, *cur)
			}
		}
	}
	for i := 0; i < len(toks); i++ {
		next := func() string {
			if i+1 < len(toks) {
				i++
				return toks[i]
			}
			return ""
		}
		switch toks[i] {
		case "machine":
			flush()
			cur, isDefault = &netrcEntry{machine: next()}, false
		case "default":
			flush()
			cur, isDefault = &netrcEntry{}, true
		case "login":
			if v := next(); cur != nil {
				cur.login = v
			}
		case "password":
			if v := next(); cur != nil {
				cur.password = v
			}
		case "account":
			next()
		case "\x00macdef":
			// netrcTokens already skipped its body
		}
	}
	flush()
	return append(out, defaults...)
}

// netrcTokens splits a netrc file into tokens; a macdef and its body
// become one marker token.
func netrcTokens(text string) []string {
	var toks []string
	for len(text) > 0 {
		text = strings.TrimLeft(text, " \t\r\n")
		if text == "" {
			break
		}
		if text[0] == '"' {
			var b strings.Builder
			i := 1
			for ; i < len(text) && text[i] != '"'; i++ {
				if text[i] == '\\' && i+1 < len(text) {
					i++
					switch text[i] {
					case 'n':
						b.WriteByte('\n')
					case 'r':
						b.WriteByte('\r')
					case 't':
						b.WriteByte('\t')
					default:
						b.WriteByte(text[i])
					}
					continue
				}
				b.WriteByte(text[i])
			}
			toks = append(toks, b.String())
			text = text[min(i+1, len(text)):]
			continue
		}
		end := strings.IndexAny(text, " \t\r\n")
		if end < 0 {
			end = len(text)
		}
		tok := text[:end]
		text = text[end:]
		if tok == "macdef" {
			toks = append(toks, "\x00macdef")
			if i := strings.Index(text, "\n\n"); i >= 0 {
				text = text[i+2:]
			} else {
				text = ""
			}
			continue
		}
		toks = append(toks, tok)
	}
	return toks
}
