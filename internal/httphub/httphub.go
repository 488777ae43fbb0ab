// Package httphub serves bare git repositories over smart HTTP on
// loopback for tests: the git CLI's own `git http-backend` behind
// net/http/cgi, with basic authentication checked as a hosted git
// service checks it. A refusal carries an HTML page, as real hosts send,
// so tests can check that nobody prints it.
package httphub

import (
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// Hub is a running server. Repositories live under Root and are served
// at URL + "/" + their name.
type Hub struct {
	URL  string // http://127.0.0.1:PORT, no credentials
	Root string
	srv  *httptest.Server

	refused atomic.Int64
}

// refusalPage is what a hosted service answers a bad password with.
const refusalPage = `<!DOCTYPE html>
<html>
<head><title>401 Unauthorized</title></head>
<body>
<h1>Unauthorized</h1>
<p>This server could not verify that you are authorized to access the
repository requested. Either you supplied the wrong credentials, or your
browser doesn't understand how to supply the credentials required.</p>
</body>
</html>
`

// Start serves the repositories under root. Requests must carry user and
// password by basic authentication.
func Start(root, user, password string) (*Hub, error) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("git http hub: %w", err)
	}
	h := &Hub{Root: root}
	backend := &cgi.Handler{Path: gitBin, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=" + user}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			h.refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="git hub"`)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(refusalPage))
			return
		}
		backend.ServeHTTP(w, r)
	}))
	h.URL = h.srv.URL
	return h, nil
}

// NewRepo creates an empty bare repository (branch main, pushes allowed)
// and returns its URL without credentials.
func (h *Hub) NewRepo(name string) (string, error) {
	dir := filepath.Join(h.Root, name)
	for _, args := range [][]string{{"init", "-q", "--bare", "-b", "main", dir}, {"-C", dir, "config", "http.receivepack", "true"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return h.URL + "/" + name, nil
}

// WithCredentials is url with user and password written into it.
func WithCredentials(url, user, password string) string {
	return strings.Replace(url, "://", "://"+user+":"+password+"@", 1)
}

// Refused counts the requests turned away for their credentials.
func (h *Hub) Refused() int64 { return h.refused.Load() }

// Close stops the server.
func (h *Hub) Close() { h.srv.Close() }
