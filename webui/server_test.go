package webui

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

var ctx = context.Background()

const (
	testAddr  = "127.0.0.1:8080"
	testToken = "t0ken"
	testCSRF  = "csrf-secret"
)

func openStore(t *testing.T, machine, remote string) *anamnesis.Store {
	t.Helper()
	s, err := anamnesis.Open(ctx, t.TempDir(), anamnesis.Options{MachineID: machine, Remote: remote, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newServer(t testing.TB, st *anamnesis.Store) *Server {
	t.Helper()
	srv, err := New(ctx, st, Options{Addr: testAddr, Token: testToken, CSRF: testCSRF})
	if err != nil {
		t.Fatal(err)
	}
	srv.waitVersions()
	return srv
}

// do sends a request as a browser on this machine would: the loopback
// Host and, with auth, the cookie.
func do(srv *Server, method, target string, form url.Values, auth bool, edit func(*http.Request)) *httptest.ResponseRecorder {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, target, body)
	r.Host = testAddr
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if auth {
		r.AddCookie(&http.Cookie{Name: srv.cookieName(), Value: testToken})
	}
	if edit != nil {
		edit(r)
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	return w
}

func write(t *testing.T, s *anamnesis.Store, title, body string) string {
	t.Helper()
	n, _, err := s.Write(ctx, anamnesis.WriteRequest{Type: "semantic", Title: title, Body: body, Project: "app"})
	if err != nil {
		t.Fatal(err)
	}
	return n.ID
}

func TestRefusals(t *testing.T) {
	s := openStore(t, "desk", "")
	id := write(t, s, "Secret plans", "The launch code is swordfish.")
	srv := newServer(t, s)
	secret := func(w *httptest.ResponseRecorder) bool {
		b := w.Body.String()
		return strings.Contains(b, "swordfish") || strings.Contains(b, "Secret plans")
	}
	for _, target := range []string{"/", "/note/" + id, "/note/" + id + "/edit", "/conflicts", "/fleet", "/?q=swordfish", "/?token=wrong"} {
		w := do(srv, "GET", target, nil, false, nil)
		if w.Code != http.StatusUnauthorized || secret(w) {
			t.Errorf("GET %s without the token: %d, note text shown: %v", target, w.Code, secret(w))
		}
	}
	// A wrong cookie is no cookie.
	w := do(srv, "GET", "/note/"+id, nil, false, func(r *http.Request) {
		r.AddCookie(&http.Cookie{Name: srv.cookieName(), Value: "guess"})
	})
	if w.Code != http.StatusUnauthorized || secret(w) {
		t.Errorf("wrong cookie: %d", w.Code)
	}
	// A foreign Host is refused even with the cookie (DNS rebinding: the
	// browser sends the attacker's name and, being same-origin to it, no
	// cookie; with one it must still be refused).
	for _, host := range []string{"evil.example:8080", "127.0.0.1:9999", "localhost.evil.example:8080", "127.0.0.2:8080", "", "127.0.0.1"} {
		w := do(srv, "GET", "/note/"+id, nil, true, func(r *http.Request) { r.Host = host })
		if w.Code != http.StatusMisdirectedRequest || secret(w) {
			t.Errorf("Host %q: %d", host, w.Code)
		}
	}
	for _, host := range []string{"localhost:8080", "[::1]:8080", "LOCALHOST:8080"} {
		if w := do(srv, "GET", "/", nil, true, func(r *http.Request) { r.Host = host }); w.Code != http.StatusOK {
			t.Errorf("Host %q refused: %d", host, w.Code)
		}
	}
	// CSRF: a POST without the token, or with another, changes nothing.
	before, _, _ := s.Get(ctx, id)
	for _, tok := range []string{"", "wrong"} {
		form := url.Values{"title": {"Hijacked"}, "body": {"x"}, "base": {"whatever"}}
		if tok != "" {
			form.Set("csrf", tok)
		}
		w := do(srv, "POST", "/note/"+id+"/edit", form, true, nil)
		if w.Code != http.StatusForbidden {
			t.Errorf("POST with csrf %q: %d", tok, w.Code)
		}
		w = do(srv, "POST", "/new", url.Values{"csrf": {tok}, "type": {"semantic"}, "title": {"Injected"}, "body": {"x"}}, true, nil)
		if w.Code != http.StatusForbidden {
			t.Errorf("POST /new with csrf %q: %d", tok, w.Code)
		}
	}
	after, _, _ := s.Get(ctx, id)
	if after.Title != before.Title || after.UpdatedAt != before.UpdatedAt {
		t.Errorf("a refused POST changed the note: %q", after.Title)
	}
	if hits, _ := s.List(ctx, anamnesis.Filter{}); len(hits) != 1 {
		t.Errorf("a refused POST wrote a note: %d notes", len(hits))
	}
	// No CORS, whatever the Origin says.
	w = do(srv, "GET", "/", nil, true, func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") })
	for k := range w.Header() {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			t.Errorf("CORS header sent: %s", k)
		}
	}
}

func TestTokenBecomesCookie(t *testing.T) {
	s := openStore(t, "desk", "")
	srv := newServer(t, s)
	w := do(srv, "GET", "/?token="+testToken+"&type=semantic", nil, false, nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/?type=semantic" {
		t.Fatalf("token URL: %d, Location %q", w.Code, w.Header().Get("Location"))
	}
	cs := w.Result().Cookies()
	if len(cs) != 1 || cs[0].Value != testToken || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode || cs[0].Name != "anamnesis_ui_8080" {
		t.Fatalf("cookie: %+v", cs)
	}
	if !strings.Contains(srv.URL(), "127.0.0.1:8080/?token="+testToken) {
		t.Errorf("URL %s", srv.URL())
	}
}

// Note text from other machines is data: markup in a title or body is
// shown as text, raw HTML in markdown too, and a javascript: link loses
// its target.
func TestNoteTextIsEscaped(t *testing.T) {
	s := openStore(t, "desk", "")
	id := write(t, s, `<script>alert("title")</script>`, "Hello <script>alert('body')</script> **bold**\n\n<img src=x onerror=alert(1)>\n\n[click](javascript:alert(1))\n")
	srv := newServer(t, s)
	for _, target := range []string{"/", "/note/" + id, "/note/" + id + "/edit", "/?q=hello"} {
		w := do(srv, "GET", target, nil, true, nil)
		b := w.Body.String()
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", target, w.Code, b)
		}
		if strings.Contains(b, "<script>alert") || strings.Contains(b, "<img src=x") || strings.Contains(b, `href="javascript:`) {
			t.Errorf("GET %s: note markup reached the page:\n%s", target, b)
		}
		if !strings.Contains(b, "&lt;script&gt;alert(&#34;title&#34;)&lt;/script&gt;") {
			t.Errorf("GET %s: the title is not shown escaped", target)
		}
	}
	b := do(srv, "GET", "/note/"+id, nil, true, nil).Body.String()
	if !strings.Contains(b, "<strong>bold</strong>") {
		t.Error("markdown is not rendered")
	}
	if !strings.Contains(b, "&lt;img src=x onerror=alert(1)&gt;") || !strings.Contains(b, "<p>click</p>") {
		t.Error("raw HTML is not shown as text, or the javascript: link is not plain text")
	}
	if csp := do(srv, "GET", "/", nil, true, nil).Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
}

var baseRe = regexp.MustCompile(`name="base" value="([0-9a-f]+)"`)

// An edit made from a page loaded before another change to the note is
// refused with both versions shown; saving from the refusal page (which
// knows the new version) goes through.
func TestStaleEditRefused(t *testing.T) {
	s := openStore(t, "desk", "")
	id := write(t, s, "Canary", "The canary runs 30 minutes.")
	srv := newServer(t, s)
	m := baseRe.FindStringSubmatch(do(srv, "GET", "/note/"+id+"/edit", nil, true, nil).Body.String())
	if m == nil {
		t.Fatal("edit form has no base")
	}
	// Meanwhile another machine's sync (or an agent) changes the note.
	n, _, _ := s.Get(ctx, id)
	n.Body = "The canary runs 45 minutes."
	if _, err := s.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	form := url.Values{"csrf": {testCSRF}, "base": {m[1]}, "title": {"Canary"}, "body": {"The canary runs 60 minutes."}, "project": {"app"}}
	w := do(srv, "POST", "/note/"+id+"/edit", form, true, nil)
	if w.Code != http.StatusConflict {
		t.Fatalf("stale edit: %d", w.Code)
	}
	b := w.Body.String()
	if !strings.Contains(b, "45 minutes") || !strings.Contains(b, "60 minutes") || !strings.Contains(b, "changed since you opened it") {
		t.Errorf("refusal does not show both versions:\n%s", b)
	}
	if got, _, _ := s.Get(ctx, id); got.Body != "The canary runs 45 minutes." {
		t.Errorf("the stale edit was written: %q", got.Body)
	}
	m2 := baseRe.FindStringSubmatch(b)
	if m2 == nil || m2[1] == m[1] {
		t.Fatal("the refusal page does not carry the new version's hash")
	}
	form.Set("base", m2[1])
	w = do(srv, "POST", "/note/"+id+"/edit", form, true, nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("edit after review: %d\n%s", w.Code, w.Body.String())
	}
	if got, _, _ := s.Get(ctx, id); got.Body != "The canary runs 60 minutes." || got.ID != id {
		t.Errorf("edit after review: %q", got.Body)
	}
}

var rowRe = regexp.MustCompile(`<a class="title" href="/note/([0-9A-Z]+)">`)
var nextRe = regexp.MustCompile(`<a class="button" href="(/\?[^"]+)">Older notes`)

// Paging walks every note once, newest first, 50 a page, with filters
// kept across pages.
func TestPaging(t *testing.T) {
	s := openStore(t, "desk", "")
	for i := 0; i < 120; i++ {
		if _, _, err := s.Write(ctx, anamnesis.WriteRequest{Type: "semantic", Title: "n", Body: "b", Scope: "machine-local"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Write(ctx, anamnesis.WriteRequest{Type: "procedural", Title: "p", Body: "b", Scope: "machine-local"}); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, s)
	all, _ := s.List(ctx, anamnesis.Filter{Type: "semantic"})
	var want []string
	for _, h := range all {
		want = append(want, h.ID)
	}
	var got []string
	target := "/?type=semantic"
	pages := 0
	for target != "" {
		w := do(srv, "GET", target, nil, true, nil)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", target, w.Code)
		}
		b := w.Body.String()
		if !strings.Contains(b, "120 notes") {
			t.Errorf("page %d does not count the filtered notes", pages)
		}
		for _, m := range rowRe.FindAllStringSubmatch(b, -1) {
			got = append(got, m[1])
		}
		pages++
		target = ""
		if m := nextRe.FindStringSubmatch(b); m != nil {
			target = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if pages != 3 || !slices.Equal(got, want) {
		t.Errorf("%d pages, %d notes; want 3 pages, the %d semantic notes in List's order", pages, len(got), len(want))
	}
}

// A conflict made by two machines shows both versions on the conflicts
// page, and keeping the copy from there resolves it.
func TestResolveFromConflictsPage(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := openStore(t, "desk", hub), openStore(t, "laptop", hub)
	id := write(t, a, "Canary", "The canary runs 30 minutes.")
	sync := func(ss ...*anamnesis.Store) {
		for _, s := range ss {
			if _, err := s.Sync(ctx, anamnesis.SyncOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	sync(a, b)
	for s, body := range map[*anamnesis.Store]string{a: "The canary runs 45 minutes.", b: "The canary runs 60 minutes."} {
		n, _, _ := s.Get(ctx, id)
		n.Body = body
		if _, err := s.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	sync(a, b)
	cs, _ := b.Conflicts(ctx)
	if len(cs) != 1 || len(cs[0].Copies) != 1 {
		t.Fatalf("conflicts: %+v", cs)
	}
	cp := cs[0].Copies[0]
	synced := 0
	srv, err := New(ctx, b, Options{Addr: testAddr, Token: testToken, CSRF: testCSRF, AfterWrite: func() { synced++ }})
	if err != nil {
		t.Fatal(err)
	}
	srv.waitVersions()
	page := do(srv, "GET", "/conflicts", nil, true, nil).Body.String()
	if !strings.Contains(page, "45 minutes") || !strings.Contains(page, "60 minutes") || !strings.Contains(page, cp) {
		t.Fatalf("conflicts page does not show both versions:\n%s", page)
	}
	// Each version is labelled with the machine that made it, side by
	// side with the changed words marked; the merge box holds both; the
	// navigation counts the conflict.
	for _, want := range []string{"<strong>desk</strong>'s version", "<strong>laptop</strong>'s version", `class="sbs"`,
		`<mark class="w">45</mark>`, `<mark class="w">60</mark>`, "The canary runs 60 minutes.\nThe canary runs 45 minutes.\n</textarea>",
		`<span class="count" aria-label="1 unresolved">1</span>`,
		"merged just now"} { // no sync report: the header falls back on this machine's merge commit
		if !strings.Contains(page, want) {
			t.Errorf("conflicts page lacks %q", want)
		}
	}
	copyNote, _, _ := b.Get(ctx, cp)
	w := do(srv, "POST", "/conflicts/resolve", url.Values{"csrf": {testCSRF}, "id": {id}, "keep": {cp}, "action": {"keep"}}, true, nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("resolve: %d\n%s", w.Code, w.Body.String())
	}
	if got, _, _ := b.Get(ctx, id); got.Body != copyNote.Body {
		t.Errorf("kept %q, want the copy's %q", got.Body, copyNote.Body)
	}
	if cs, _ := b.Conflicts(ctx); len(cs) != 0 || synced != 1 {
		t.Errorf("after resolve: conflicts %+v, background syncs %d", cs, synced)
	}
	if page := do(srv, "GET", "/conflicts", nil, true, nil).Body.String(); !strings.Contains(page, "No conflicts") {
		t.Error("the conflicts page still lists it")
	}
}

// The other pages render with history, search and fleet data, and a
// write from the form reaches the store and the history.
func TestPagesRender(t *testing.T) {
	s := openStore(t, "desk", "")
	id := write(t, s, "Walrus cache size", "The walrus cache holds 512 entries.")
	n, _, _ := s.Get(ctx, id)
	n.Body = "The walrus cache holds 1024 entries."
	if _, err := s.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, s)
	srv.refreshSlow(true)
	check := func(target string, want ...string) {
		t.Helper()
		w := do(srv, "GET", target, nil, true, nil)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", target, w.Code, w.Body.String())
		}
		for _, s := range want {
			if !strings.Contains(w.Body.String(), s) {
				t.Errorf("GET %s lacks %q\n%s", target, s, w.Body.String())
			}
		}
	}
	check("/?q=walrus", "Walrus cache size", "Results 1–1 for", "<mark>walrus</mark>")
	check("/note/"+id, "Walrus cache size", `<span class="del">- The walrus cache holds <mark class="w">512</mark> entries.</span>`, `<span class="add">&#43; The walrus cache holds <mark class="w">1024</mark> entries.</span>`, "desk")
	check("/fleet", "desk", "this machine", "index integrity")
	check("/new?supersedes="+id, `name="supersedes" value="`+id+`"`)
	w := do(srv, "POST", "/new", url.Values{"csrf": {testCSRF}, "type": {"semantic"}, "title": {"Walrus cache, revised"},
		"body": {"Now 2048.\r\nLine two."}, "supersedes": {id}, "scope": {"portable"}}, true, nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("write: %d\n%s", w.Code, w.Body.String())
	}
	newID := strings.TrimPrefix(strings.TrimSuffix(w.Header().Get("Location"), "?done=written"), "/note/")
	got, _, err := s.Get(ctx, newID)
	if err != nil || got.Body != "Now 2048.\nLine two." || !slices.Equal(got.Supersedes, []string{id}) {
		t.Fatalf("written note: %+v, %v", got, err)
	}
	check("/note/"+id, "Superseded by", newID)
	check("/", "superseded")
	if w := do(srv, "GET", "/?type=bogus", nil, true, nil); w.Code != http.StatusBadRequest {
		t.Errorf("bad filter: %d", w.Code)
	}
	if w := do(srv, "GET", "/note/NOPE", nil, true, nil); w.Code != http.StatusNotFound {
		t.Errorf("unknown note: %d", w.Code)
	}
	if w := do(srv, "GET", "/note/..%2f..%2fetc", nil, true, nil); w.Code != http.StatusBadRequest && w.Code != http.StatusNotFound {
		t.Errorf("odd id: %d", w.Code)
	}
}

// "Sync now" runs a sync, returns to the page it came from (only a path
// of this server), and the header says how it went; without the CSRF
// token it is refused.
func TestSyncNow(t *testing.T) {
	hub := testutil.BareHub(t)
	s := openStore(t, "desk", hub)
	write(t, s, "Walrus cache size", "512 entries.")
	srv := newServer(t, s)
	if w := do(srv, "POST", "/sync", url.Values{"back": {"/fleet"}}, true, nil); w.Code != http.StatusForbidden {
		t.Errorf("without CSRF: %d", w.Code)
	}
	page := do(srv, "GET", "/", nil, true, nil).Body.String()
	if !strings.Contains(page, "no sync seen yet") || !strings.Contains(page, `action="/sync"`) {
		t.Errorf("before a sync the header says:\n%s", page)
	}
	w := do(srv, "POST", "/sync", url.Values{"csrf": {testCSRF}, "back": {"/fleet"}}, true, nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/fleet" {
		t.Fatalf("sync now: %d %q", w.Code, w.Header().Get("Location"))
	}
	page = do(srv, "GET", "/fleet", nil, true, nil).Body.String()
	if !strings.Contains(page, `class="sync ok"`) || !strings.Contains(page, "synced just now") || !strings.Contains(page, "pushed") {
		t.Errorf("after a sync the header says:\n%s", page)
	}
	if w := do(srv, "POST", "/sync", url.Values{"csrf": {testCSRF}, "back": {"//evil.test/"}}, true, nil); w.Header().Get("Location") != "/" {
		t.Errorf("back to another site: %q", w.Header().Get("Location"))
	}

	// A hub that is gone: the header turns red and says why.
	bad := openStore(t, "laptop", filepath.Join(t.TempDir(), "no-such-hub.git"))
	write(t, bad, "Canary", "30 minutes.")
	srv = newServer(t, bad)
	do(srv, "POST", "/sync", url.Values{"csrf": {testCSRF}, "back": {"/"}}, true, nil)
	page = do(srv, "GET", "/", nil, true, nil).Body.String()
	if !strings.Contains(page, `class="sync bad"`) || !strings.Contains(page, "sync failed just now") || !strings.Contains(page, "Last sync failed:") {
		t.Errorf("after a failed sync the header says:\n%s", page)
	}
}

// The last background sync is read from state/sync.log.
func TestLastLoggedSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sync.log")
	log := "2026-11-25T10:00:00.000Z pid 7 synced\n2026-11-25T10:00:01.000Z pid 7 exit 0 after 1s\n" +
		"2026-11-25T11:00:00.000Z pid 9 anamnesis: sync: fetch: hub unreachable\n2026-11-25T11:00:02.000Z pid 9 exit 1 after 2s\n"
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	at, failed, detail, ok := lastLoggedSync(path)
	if !ok || !failed || detail != "anamnesis: sync: fetch: hub unreachable" || at.Hour() != 11 {
		t.Errorf("got %v %v %q %v", at, failed, detail, ok)
	}
}

// An old version can be viewed and restored; the restore is a new commit
// and refused when the note changed since the page was made.
func TestViewAndRestoreVersion(t *testing.T) {
	s := openStore(t, "desk", "")
	id := write(t, s, "Walrus cache size", "The walrus cache holds 512 entries.")
	n, _, _ := s.Get(ctx, id)
	n.Body, n.Title = "The walrus cache holds 1024 entries.", "Walrus cache (raised)"
	if _, err := s.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, s)
	h, err := s.History(ctx, id, 0)
	if err != nil || len(h.Versions) != 2 {
		t.Fatalf("history: %+v %v", h, err)
	}
	first := h.Versions[1].Commit
	w := do(srv, "GET", "/note/"+id+"/version/"+first, nil, true, nil)
	page := w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(page, "512 entries") || !strings.Contains(page, "Restore this version") {
		t.Fatalf("version page: %d\n%s", w.Code, page)
	}
	base := regexp.MustCompile(`name="base" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if base == nil {
		t.Fatal("no base in the restore form")
	}
	if w := do(srv, "GET", "/note/"+id+"/version/"+strings.Repeat("0", 40), nil, true, nil); w.Code != http.StatusNotFound {
		t.Errorf("unknown version: %d", w.Code)
	}
	if w := do(srv, "POST", "/note/"+id+"/version/"+first+"/restore", url.Values{"csrf": {testCSRF}, "base": {"stale"}}, true, nil); w.Code != http.StatusConflict {
		t.Errorf("stale restore: %d", w.Code)
	}
	w = do(srv, "POST", "/note/"+id+"/version/"+first+"/restore", url.Values{"csrf": {testCSRF}, "base": {base[1]}}, true, nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("restore: %d\n%s", w.Code, w.Body.String())
	}
	got, _, _ := s.Get(ctx, id)
	if got.Body != "The walrus cache holds 512 entries." || got.Title != "Walrus cache size" {
		t.Errorf("restored: %q %q", got.Title, got.Body)
	}
	if h, _ := s.History(ctx, id, 0); len(h.Versions) != 3 {
		t.Errorf("the restore is not a new commit: %d versions", len(h.Versions))
	}
	if page := do(srv, "GET", "/note/"+id+"?done=restored", nil, true, nil).Body.String(); !strings.Contains(page, "restored, as a new commit") {
		t.Error("no word of the restore")
	}
}

// The filters' counts are within the other active filters.
func TestFacetsWithinFilters(t *testing.T) {
	s := openStore(t, "desk", "")
	for i, p := range []string{"alpha", "alpha", "beta"} {
		typ := []string{"semantic", "procedural", "semantic"}[i]
		if _, _, err := s.Write(ctx, anamnesis.WriteRequest{Type: typ, Title: fmt.Sprintf("Note %d", i), Body: "Body.", Project: p}); err != nil {
			t.Fatal(err)
		}
	}
	srv := newServer(t, s)
	page := do(srv, "GET", "/?project=alpha", nil, true, nil).Body.String()
	for _, want := range []string{">semantic (1)</option>", ">procedural (1)</option>", ">alpha (2)</option>", ">beta (1)</option>"} {
		if !strings.Contains(page, want) {
			t.Errorf("with project=alpha the filters lack %q", want)
		}
	}
	page = do(srv, "GET", "/?type=semantic", nil, true, nil).Body.String()
	for _, want := range []string{">alpha (1)</option>", ">beta (1)</option>", ">procedural (1)</option>", ">semantic (2)</option>"} {
		if !strings.Contains(page, want) {
			t.Errorf("with type=semantic the filters lack %q", want)
		}
	}
}

// Preview renders the form's markdown above it and saves nothing; the
// editor suggests the store's projects and tags.
func TestEditorPreviewAndSuggestions(t *testing.T) {
	s := openStore(t, "desk", "")
	if _, _, err := s.Write(ctx, anamnesis.WriteRequest{Type: "semantic", Title: "Walrus", Body: "512.", Project: "github.com/acme/api", Tags: []string{"cache"}}); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, s)
	page := do(srv, "GET", "/new", nil, true, nil).Body.String()
	if !strings.Contains(page, `<option value="github.com/acme/api">`) || !strings.Contains(page, "Tags in use: cache") {
		t.Errorf("no suggestions:\n%s", page)
	}
	w := do(srv, "POST", "/new", url.Values{"csrf": {testCSRF}, "type": {"semantic"}, "scope": {"portable"}, "title": {"Draft"},
		"body": {"Some **bold** <script>x</script>"}, "preview": {"1"}}, true, nil)
	page = w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(page, "Preview: not saved yet") || !strings.Contains(page, "<strong>bold</strong>") || strings.Contains(page, "<script>x") {
		t.Errorf("preview: %d\n%s", w.Code, page)
	}
	if n, _ := s.Count(ctx, anamnesis.Filter{}); n != 1 {
		t.Errorf("a preview wrote a note: %d notes", n)
	}
}

// Search leaves superseded notes out; "include superseded" brings them
// back, marked and linked to what replaces them, across pages.
func TestSearchIncludeSuperseded(t *testing.T) {
	s := openStore(t, "desk", "")
	old := write(t, s, "Walrus cache size", "The walrus cache holds 512 entries.")
	n, _, err := s.Write(ctx, anamnesis.WriteRequest{Type: "semantic", Title: "Walrus cache size, revised", Body: "The walrus cache holds 1024 entries.", Project: "app", Supersedes: []string{old}})
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, s)
	b := do(srv, "GET", "/?q=walrus", nil, true, nil).Body.String()
	if ids := rowIDs(b); !slices.Equal(ids, []string{n.ID}) {
		t.Errorf("default search: %v", ids)
	}
	if !strings.Contains(b, `name="sup" value="1" >`) || !strings.Contains(b, `sup=1">include them</a>`) {
		t.Errorf("the search page offers no way to include superseded notes:\n%s", b)
	}
	b = do(srv, "GET", "/?q=walrus&sup=1", nil, true, nil).Body.String()
	if ids := rowIDs(b); len(ids) != 2 || !slices.Contains(ids, old) {
		t.Errorf("with superseded: %v", ids)
	}
	for _, want := range []string{`name="sup" value="1" checked>`, `superseded-badge`, `<a class="by" href="/note/` + n.ID + `">`, "superseded notes included"} {
		if !strings.Contains(b, want) {
			t.Errorf("with superseded, the page lacks %q", want)
		}
	}
	// Paging keeps the toggle.
	for i := 0; i < PageSize+5; i++ {
		write(t, s, fmt.Sprintf("Walrus %d", i), "walrus walrus")
	}
	b = do(srv, "GET", "/?q=walrus&sup=1", nil, true, nil).Body.String()
	m := regexp.MustCompile(`href="(/\?[^"]*page=2[^"]*)">More results`).FindStringSubmatch(b)
	if m == nil || !strings.Contains(m[1], "sup=1") {
		t.Errorf("the next page link drops the toggle: %v", m)
	}
}

func rowIDs(page string) []string {
	var ids []string
	for _, m := range rowRe.FindAllStringSubmatch(page, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// With several conflicts on the page, every version is labelled with
// the machine that made it: who made each card's version is looked up
// for all the page's cards at once.
func TestConflictsPageNamesEveryVersion(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := openStore(t, "desk", hub), openStore(t, "laptop", hub)
	ids := []string{write(t, a, "Canary", "The canary runs 30 minutes."), write(t, a, "Rollout", "Rollouts start at 9.")}
	for _, s := range []*anamnesis.Store{a, b} {
		if _, err := s.Sync(ctx, anamnesis.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		for s, body := range map[*anamnesis.Store]string{a: "Changed on the desk.", b: "Changed on the laptop."} {
			n, _, _ := s.Get(ctx, id)
			n.Body = n.Title + ": " + body
			if _, err := s.Update(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range []*anamnesis.Store{a, b} {
		if _, err := s.Sync(ctx, anamnesis.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if cs, _ := b.Conflicts(ctx); len(cs) != 2 {
		t.Fatalf("conflicts: %+v", cs)
	}
	page := do(newServer(t, b), "GET", "/conflicts", nil, true, nil).Body.String()
	// Each version is named on its card and above its side of the
	// comparison: two conflicts, two versions each.
	for _, m := range []string{"desk", "laptop"} {
		if n := strings.Count(page, "<strong>"+m+"</strong>'s version"); n != 4 {
			t.Errorf("%s's versions named %d times, want 4:\n%s", m, n, page)
		}
	}
}
