package webui

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/consolidate"
	"github.com/anamnesis-memory/anamnesis/note"
)

// reflector is a consolidate.Model that distills any session notes into
// one note whose title and body are hostile markup.
type reflector struct{}

func (reflector) Name() string { return "fake/model" }
func (reflector) Complete(_ context.Context, req consolidate.Request) (consolidate.Reply, error) {
	if req.System == consolidate.ReflectSystemPrompt {
		return consolidate.Reply{Text: `[{"type":"procedural","title":"Routines <script>alert(1)</script>","body":"Deploy with **make -j2**; <img src=x onerror=alert(2)>"}]`}, nil
	}
	return consolidate.Reply{Text: "[]"}, nil
}

// pendingStore is a store with five session notes and one proposal
// pending review that distills them, made as `consolidate --review` does.
func pendingStore(t *testing.T) (*anamnesis.Store, []string, anamnesis.Pending) {
	t.Helper()
	s := openStore(t, "desk", "")
	var eps []string
	for _, topic := range []string{"heron deploy", "kestrel cache", "osprey schema", "plover lint", "wren release"} {
		n, _, err := s.Write(ctx, anamnesis.WriteRequest{Type: note.TypeEpisodic, Project: "app", Title: "session: " + topic,
			Body: "Ask: " + topic + "\nOutcome: settled " + topic, Tags: []string{"session"}, ProvSource: "session-end"})
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, n.ID)
	}
	pl := &consolidate.Planner{Model: reflector{}, Budget: &consolidate.Budget{Limits: consolidate.DefaultLimits(), Path: filepath.Join(t.TempDir(), "b.json")}}
	rep, err := s.Consolidate(ctx, anamnesis.ConsolidateOptions{Planner: pl, Review: true, NoGate: true})
	if err != nil || len(rep.Pending) != 1 {
		t.Fatalf("consolidate --review: %+v %v", rep, err)
	}
	pend, err := s.PendingProposals()
	if err != nil || len(pend) != 1 {
		t.Fatalf("pending %v %v", pend, err)
	}
	return s, eps, pend[0]
}

func TestReviewPageShowsProposalBesideSources(t *testing.T) {
	s, eps, p := pendingStore(t)
	srv := newServer(t, s)
	w := do(srv, "GET", "/review", nil, true, nil)
	body := w.Body.String()
	if w.Code != http.StatusOK {
		t.Fatalf("GET /review: %d\n%s", w.Code, body)
	}
	for _, want := range []string{
		`<strong>make -j2</strong>`,                      // the body, rendered
		`Routines &lt;script&gt;alert(1)&lt;/script&gt;`, // the title, escaped
		`action="/review/` + p.ID + `"`,
		`name="csrf" value="` + testCSRF + `"`,
		`value="accept"`, `value="discard"`,
		`aria-label="1 pending"`, // the navigation's count
	} {
		if !strings.Contains(body, want) {
			t.Errorf("review page lacks %q", want)
		}
	}
	for _, id := range eps {
		if !strings.Contains(body, `href="/note/`+id+`"`) {
			t.Errorf("review page does not link source %s", id)
		}
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img") {
		t.Errorf("note text reached the page as markup:\n%s", body)
	}
	// Every page's navigation says a proposal waits.
	if b := do(srv, "GET", "/", nil, true, nil).Body.String(); !strings.Contains(b, `aria-label="1 pending"`) {
		t.Error("the notes page's navigation lacks the pending count")
	}
}

func TestReviewAccept(t *testing.T) {
	s, eps, p := pendingStore(t)
	srv := newServer(t, s)
	w := do(srv, "POST", "/review/"+p.ID, url.Values{"csrf": {testCSRF}, "action": {"accept"}}, true, nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/review?accepted="+p.ID {
		t.Fatalf("accept: %d %q\n%s", w.Code, w.Header().Get("Location"), w.Body.String())
	}
	if pend, _ := s.PendingProposals(); len(pend) != 0 {
		t.Errorf("still pending: %v", pend)
	}
	// Written: the distilled note supersedes every session note.
	sup, err := s.SupersededBy(ctx, eps)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range eps {
		if !slices.Contains(sup[id], p.Proposal.ID) {
			t.Errorf("%s superseded by %v, want %s", id, sup[id], p.Proposal.ID)
		}
	}
	b := do(srv, "GET", "/review?accepted="+p.ID, nil, true, nil).Body.String()
	if !strings.Contains(b, "Accepted "+p.ID) || !strings.Contains(b, "No consolidation proposals are waiting") || strings.Contains(b, `class="count pending"`) {
		t.Errorf("after accept the page says:\n%s", b)
	}
	// Accepting again (a stale tab) is a 404, not a second run.
	if w := do(srv, "POST", "/review/"+p.ID, url.Values{"csrf": {testCSRF}, "action": {"accept"}}, true, nil); w.Code != http.StatusNotFound {
		t.Errorf("second accept: %d", w.Code)
	}
}

func TestReviewDiscard(t *testing.T) {
	s, eps, p := pendingStore(t)
	srv := newServer(t, s)
	w := do(srv, "POST", "/review/"+p.ID, url.Values{"csrf": {testCSRF}, "action": {"discard"}}, true, nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/review?discarded="+p.ID {
		t.Fatalf("discard: %d %q", w.Code, w.Header().Get("Location"))
	}
	if pend, _ := s.PendingProposals(); len(pend) != 0 {
		t.Errorf("still pending: %v", pend)
	}
	if _, _, err := s.Get(ctx, p.Proposal.ID); err == nil {
		t.Error("a discarded proposal was written")
	}
	if sup, _ := s.SupersededBy(ctx, eps); len(sup) != 0 {
		t.Errorf("a discarded proposal superseded %v", sup)
	}
	if b := do(srv, "GET", "/review?discarded="+p.ID, nil, true, nil).Body.String(); !strings.Contains(b, "Discarded "+p.ID) {
		t.Error("no flash after discard")
	}
}

func TestReviewRefusals(t *testing.T) {
	s, _, p := pendingStore(t)
	srv := newServer(t, s)
	for name, form := range map[string]url.Values{
		"no CSRF":    {"action": {"accept"}},
		"wrong CSRF": {"csrf": {"guess"}, "action": {"accept"}},
	} {
		if w := do(srv, "POST", "/review/"+p.ID, form, true, nil); w.Code != http.StatusForbidden {
			t.Errorf("%s: %d", name, w.Code)
		}
	}
	if w := do(srv, "POST", "/review/"+p.ID, url.Values{"csrf": {testCSRF}, "action": {"accept"}}, false, nil); w.Code != http.StatusUnauthorized {
		t.Errorf("without the token: %d", w.Code)
	}
	if w := do(srv, "GET", "/review", nil, false, nil); w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), "Routines") {
		t.Errorf("GET /review without the token: %d", w.Code)
	}
	if w := do(srv, "POST", "/review/"+p.ID, url.Values{"csrf": {testCSRF}, "action": {"delete"}}, true, nil); w.Code != http.StatusBadRequest {
		t.Errorf("unknown action: %d", w.Code)
	}
	if w := do(srv, "POST", "/review/zzzz", url.Values{"csrf": {testCSRF}, "action": {"discard"}}, true, nil); w.Code != http.StatusNotFound {
		t.Errorf("unknown id: %d", w.Code)
	}
	if pend, _ := s.PendingProposals(); len(pend) != 1 {
		t.Errorf("a refused request changed the pending proposals: %v", pend)
	}
}

func TestReviewEmptyState(t *testing.T) {
	srv := newServer(t, openStore(t, "desk", ""))
	b := do(srv, "GET", "/review", nil, true, nil).Body.String()
	if !strings.Contains(b, "No consolidation proposals are waiting") || !strings.Contains(b, "anamnesis consolidate --review") || strings.Contains(b, `class="count pending"`) {
		t.Errorf("empty review page:\n%s", b)
	}
}
