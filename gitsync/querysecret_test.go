package gitsync

import (
	"context"
	"io"
	nethttp "net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

func TestRedactHidesQueryValuesAndFragments(t *testing.T) {
	for in, want := range map[string]string{
		"https://h.example/r.git?token=s3cr3t":                         "https://h.example/r.git?token=***",
		"https://h.example/r.git?access_token=a&private_token=b":       "https://h.example/r.git?access_token=***&private_token=***",
		"https://u:pw@h.example/r.git?key=k#frag":                      "https://u:***@h.example/r.git?key=***#***",
		"https://h.example/r.git#only-a-fragment":                      "https://h.example/r.git#***",
		"https://h.example/r.git?bare-token":                           "https://h.example/r.git?***",
		"https://h.example/r.git?":                                     "https://h.example/r.git?",
		"peers:https://a/x?sig=1,https://b/y?password=2":               "peers:https://a/x?sig=***,https://b/y?password=***",
		`Get "https://h/r?token=t1/info/refs?service=git-upload-pack"`: `Get "https://h/r?token=***"`,
		"git@github.com:u/r.git?x=1":                                   "git@github.com:u/r.git?x=1",
		"/srv/hub.git":                                                 "/srv/hub.git",
	} {
		got := Redact(in)
		if got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
		if again := Redact(got); again != got {
			t.Errorf("Redact is not idempotent on %q: %q", got, again)
		}
	}
	for in, want := range map[string]string{
		"https://u:pw@h.example/r.git?token=s#f": "https://h.example/r.git",
		"ssh://git:pw@h.example/r.git?x=1":       "ssh://git@h.example/r.git",
		"http://h.example/r.git#frag":            "http://h.example/r.git",
		"git@github.com:u/r.git":                 "git@github.com:u/r.git",
		"/srv/hub.git":                           "/srv/hub.git",
	} {
		if got := withoutSecret(in); got != want {
			t.Errorf("withoutSecret(%q) = %q, want %q", in, got, want)
		}
	}
	if got := secretsOf("https://h/r?token=a%2Fb&n=1234"); !contains(got, "a%2Fb") || !contains(got, "a/b") {
		t.Errorf("secretsOf: %q", got)
	}
}

// startQueryHub serves one bare repository with git http-backend,
// answering only requests whose query carries token=TOKEN, as hubs that
// take a token in the URL's query do. It returns the repository's URL
// without the token, and the repository's directory.
func startQueryHub(t *testing.T, token string) (url, dir string, refused *int) {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	if out, err := exec.Command("git", "--exec-path").Output(); err != nil {
		t.Skip("git not installed")
	} else if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")); err != nil {
		t.Skip("git http-backend not installed")
	}
	root := t.TempDir()
	repo := filepath.Join(root, "hub.git")
	testutil.Git(t, root, "init", "-q", "--bare", "-b", "main", repo)
	testutil.Git(t, repo, "config", "http.receivepack", "true")
	backend := &cgi.Handler{Path: gitBin, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=memory"}}
	n := 0
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.URL.Query().Get("token") != token {
			n++
			nethttp.Error(w, "token required", nethttp.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hub.git", repo, &n
}

// TestQueryTransportCarriesTheToken: go-git against a hub that wants its
// token in the query. With the token in the endpoint (what dial did,
// building it from the URL as written) the request URL comes out as
// hub.git?token=T/info/refs?service=... and the hub refuses; with the
// endpoint cut by withoutSecret and the query added by withRemoteQuery,
// both the GET of info/refs and the POST of an upload-pack reach it.
func TestQueryTransportCarriesTheToken(t *testing.T) {
	const token = "qtok-8d2c71e0"
	url, dir, refused := startQueryHub(t, token)
	// A commit to fetch, pushed by path: the git CLI cannot take a
	// query in a remote either (it also appends /info/refs to it).
	work := t.TempDir()
	testutil.Git(t, work, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, work, "add", "f")
	testutil.Git(t, work, "commit", "-q", "-m", "c")
	testutil.Git(t, work, "push", "-q", dir, "main")
	remote := url + "?token=" + token

	session := func(endpoint string, rt nethttp.RoundTripper) (transport.UploadPackSession, error) {
		ep, err := transport.NewEndpoint(endpoint)
		if err != nil {
			t.Fatal(err)
		}
		return githttp.NewClient(&nethttp.Client{Transport: rt}).NewUploadPackSession(ep, nil)
	}
	ctx := context.Background()
	if s, err := session(remote, nethttp.DefaultTransport); err == nil {
		if _, err := s.AdvertisedReferencesContext(ctx); err == nil {
			t.Errorf("the token in the endpoint reached the hub; the premise of queryTransport is gone")
		}
	}
	before := *refused
	s, err := session(withoutSecret(remote), withRemoteQuery(nethttp.DefaultTransport, remote))
	if err != nil {
		t.Fatal(err)
	}
	adv, err := s.AdvertisedReferencesContext(ctx)
	if err != nil {
		t.Fatalf("info/refs with the query carried: %v", err)
	}
	head, err := adv.AllReferences()
	if err != nil || head == nil {
		t.Fatal(err)
	}
	req := packp.NewUploadPackRequestFromCapabilities(adv.Capabilities)
	for _, r := range head {
		if r.Name().IsBranch() {
			req.Wants = append(req.Wants, r.Hash())
		}
	}
	resp, err := s.UploadPack(ctx, req)
	if err != nil {
		t.Fatalf("upload-pack with the query carried: %v", err)
	}
	if n, err := io.Copy(io.Discard, resp); err != nil || n == 0 {
		t.Fatalf("pack: %d bytes, %v", n, err)
	}
	resp.Close()
	if *refused != before {
		t.Errorf("%d requests went without the token", *refused-before)
	}
	// Without a query the transport is the base one, untouched.
	if withRemoteQuery(nethttp.DefaultTransport, url) != nethttp.DefaultTransport {
		t.Error("a remote without a query got a wrapped transport")
	}
}

// TestQueryTokenStaysOutOfRepoAndReport: a sync to a remote with a token
// in its query never writes the token into memory/.git (config included)
// nor into the report or the error, while the query still reaches the
// hub with every request (dial wraps the transport in withRemoteQuery).
func TestQueryTokenStaysOutOfRepoAndReport(t *testing.T) {
	credHome(t)
	const token = "qtok-51aa09f3"
	url, _, _ := startQueryHub(t, token)
	remote := url + "?token=" + token
	a := newMachine(t, "a", remote)
	a.write(mkNote(a, "over http", "x"))
	a.advance()
	rep, err := a.repo.Sync(ctx, Options{Remote: remote, Timeout: 20e9})
	if err != nil && strings.Contains(err.Error(), token) {
		t.Errorf("error shows the token: %v", err)
	}
	if strings.Contains(rep.Remote, token) || !strings.Contains(rep.Remote, "?token=***") {
		t.Errorf("report remote: %q", rep.Remote)
	}
	if err != nil || !rep.Pushed {
		t.Errorf("a hub that takes its token in the query: pushed=%v err=%v", rep.Pushed, err)
	}
	noSecretIn(t, a.repo.GitDir(), token)
	if got := strings.TrimSpace(testutil.Git(t, a.repo.Dir(), "remote", "get-url", "origin")); got != url {
		t.Errorf("origin is %q, want %q", got, url)
	}
}
