package webui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/anamnesis-memory/anamnesis"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Peer is a machine of the tailnet as the fleet page shows it.
type Peer struct {
	Name     string
	OS       string
	Online   bool
	SameUser bool
	Tags     []string
	// Serves says it answers as an anamnesis server at URL; Reason says
	// why it was not reached when it was asked.
	Serves bool
	URL    string
	Reason string
}

// Tailnet is what the fleet page shows of Tailscale.
type Tailnet struct {
	Summary string // tailscaled's state in one line
	Self    string
	Peers   []Peer
}

// Options configure a Server. The zero value works: random tokens, no
// tailnet, no background sync.
type Options struct {
	// Addr is the listener's address (127.0.0.1:PORT): the Host header
	// must name its port.
	Addr string
	// Token authenticates the browser (in the printed URL, then a
	// cookie); CSRF goes into every form. Empty: random.
	Token, CSRF string
	// Install is what Doctor checks the hooks against.
	Install anamnesis.Install
	// Tailnet asks tailscaled for peers and probes whether they serve;
	// nil leaves the section out. It may be slow: the fleet page shows
	// its last answer and asks again in the background.
	Tailnet func(ctx context.Context) (Tailnet, error)
	// AfterWrite runs after every write, edit and resolve (cmd starts a
	// background sync there); nil does nothing.
	AfterWrite func()
	// SyncConfigured says AfterWrite sends changes to other machines, so
	// the page can say so.
	SyncConfigured bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Server is the UI's http.Handler.
type Server struct {
	st    *anamnesis.Store
	opts  Options
	port  string
	pages map[string]*template.Template
	mux   *http.ServeMux

	// writeMu makes "check the note is unchanged, then write it" one step
	// among this server's requests.
	writeMu sync.Mutex

	slow    slowCache
	facetsC facetsCache

	// vers is the history of every note file, kept up to date with main;
	// versBuilding says its first build (or catching up at start) runs.
	vers         *versionIndex
	versMu       sync.Mutex
	versBuilding bool
	versDone     chan struct{} // closed when the first build ends

	// syncMu guards lastSync, the last sync "Sync now" ran, and logSeen,
	// the last reading of state/sync.log.
	syncMu   sync.Mutex
	lastSync syncRecord
	logSeen  loggedSyncState

	baseCtx context.Context
}

// PageSize is how many notes a page of the list shows.
const PageSize = 50

// New returns the UI for st. ctx bounds background work (doctor, peer
// probes): cancel it when the server stops.
func New(ctx context.Context, st *anamnesis.Store, opts Options) (*Server, error) {
	_, port, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("web UI address %q: %w", opts.Addr, err)
	}
	if opts.Token == "" {
		if opts.Token, err = randomToken(); err != nil {
			return nil, err
		}
	}
	if opts.CSRF == "" {
		if opts.CSRF, err = randomToken(); err != nil {
			return nil, err
		}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{st: st, opts: opts, port: port, baseCtx: ctx, mux: http.NewServeMux(), vers: newVersionIndex(st.Home()), versDone: make(chan struct{})}
	s.buildVersions()
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, fmt.Errorf("web UI assets: %w", err)
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.notesPage)
	s.mux.HandleFunc("GET /note/{id}", s.notePage)
	s.mux.HandleFunc("GET /note/{id}/edit", s.editPage)
	s.mux.HandleFunc("POST /note/{id}/edit", s.saveEdit)
	s.mux.HandleFunc("GET /note/{id}/version/{commit}", s.versionPage)
	s.mux.HandleFunc("POST /note/{id}/version/{commit}/restore", s.restore)
	s.mux.HandleFunc("GET /new", s.newPage)
	s.mux.HandleFunc("POST /new", s.saveNew)
	s.mux.HandleFunc("GET /conflicts", s.conflictsPage)
	s.mux.HandleFunc("POST /conflicts/resolve", s.resolve)
	s.mux.HandleFunc("GET /review", s.reviewPage)
	s.mux.HandleFunc("POST /review/{id}", s.review)
	s.mux.HandleFunc("GET /fleet", s.fleetPage)
	s.mux.HandleFunc("POST /fleet/refresh", s.refreshFleet)
	s.mux.HandleFunc("POST /sync", s.syncNow)
	return s, nil
}

// URL is the address to open: it carries the token.
func (s *Server) URL() string {
	return "http://127.0.0.1:" + s.port + "/?token=" + url.QueryEscape(s.opts.Token)
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a random token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// cookieName has the port in it: cookies are shared by every port of a
// host, and a second `anamnesis ui` (another home) must not take over the
// first one's.
func (s *Server) cookieName() string { return "anamnesis_ui_" + s.port }

// ServeHTTP checks every request before any page sees it: the Host
// header, then the token (from the URL, once, or the cookie), then the
// CSRF token of a POST.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if !s.loopbackHost(r.Host) {
		// A page of another site whose name was made to resolve to
		// 127.0.0.1 (DNS rebinding) arrives with that name here.
		http.Error(w, "refused: the Host header must be 127.0.0.1:"+s.port+", localhost:"+s.port+" or [::1]:"+s.port, http.StatusMisdirectedRequest)
		return
	}
	if tok := r.URL.Query().Get("token"); tok != "" {
		if !equal(tok, s.opts.Token) {
			s.unauthorized(w)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: s.opts.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		// The token leaves the address bar (and the history entry the
		// next page makes).
		q := r.URL.Query()
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	c, err := r.Cookie(s.cookieName())
	if err != nil || !equal(c.Value, s.opts.Token) {
		s.unauthorized(w)
		return
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, 4<<20)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "refused: the form could not be read: "+err.Error(), http.StatusBadRequest)
			return
		}
		if !equal(r.PostForm.Get("csrf"), s.opts.CSRF) {
			http.Error(w, "refused: missing or wrong CSRF token; reload the page and try again", http.StatusForbidden)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) unauthorized(w http.ResponseWriter) {
	http.Error(w, "401: open the address `anamnesis ui` printed (it carries the token)", http.StatusUnauthorized)
}

func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// loopbackHost accepts exactly the loopback names of this server's port.
func (s *Server) loopbackHost(host string) bool {
	h, p, err := net.SplitHostPort(host)
	if err != nil || p != s.port {
		return false
	}
	switch strings.ToLower(h) {
	case "127.0.0.1", "localhost", "::1":
		return true
	}
	return false
}
