package webui

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/consolidate"
)

// pendingID matches a pending proposal's id (8 hex digits, from
// Store.addPending); anything else is refused before it reaches a
// redirect or the store.
var pendingID = regexp.MustCompile(`^[0-9a-f]{8}$`)

// proposalView is a pending proposal as the review page shows it.
type proposalView struct {
	anamnesis.PendingView
	// New: the proposal writes a note of its own (reflect, synthesize);
	// otherwise Keeps names the existing note that stays.
	New   bool
	Keeps ref
	// Tagged are session notes a "reflected" proposal only tags.
	Tagged []ref
	// Gone counts the notes it would replace that no longer exist here.
	Gone int
}

func (s *Server) reviewPage(w http.ResponseWriter, r *http.Request) {
	views, err := s.st.PendingViews(r.Context())
	if err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	out := make([]proposalView, 0, len(views))
	for _, v := range views {
		pv := proposalView{PendingView: v, Gone: len(v.Proposal.Supersedes) - len(v.Replaces)}
		switch v.Proposal.Kind {
		case consolidate.KindReflect, consolidate.KindSynthesize:
			pv.New = true
		case consolidate.KindKeep, consolidate.KindDedup:
			pv.Keeps = s.refOf(r, v.Proposal.ID)
		}
		for _, id := range v.Proposal.Reflected {
			pv.Tagged = append(pv.Tagged, s.refOf(r, id))
		}
		out = append(out, pv)
	}
	flash := ""
	q := r.URL.Query()
	if id := q.Get("accepted"); pendingID.MatchString(id) {
		flash = "Accepted " + id + ": written and committed as a consolidation run (`anamnesis consolidate --undo` undoes it)."
		if s.opts.SyncConfigured {
			flash += " A sync has started in the background."
		}
	} else if id := q.Get("discarded"); pendingID.MatchString(id) {
		flash = "Discarded " + id + ": nothing was written."
	}
	s.render(w, r, http.StatusOK, "review", "Review", "review", out, flash)
}

// review accepts or discards a pending proposal through the same Store
// method the CLI's --accept/--discard and the MCP tool use.
func (s *Server) review(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	accept := false
	switch r.PostForm.Get("action") {
	case "accept":
		accept = true
	case "discard":
	default:
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("review %s: the action must be accept or discard: %w", id, anamnesis.ErrInvalid))
		return
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	// ReviewPending says "no such proposal" as a plain error; asking first
	// makes a stale page (another tab, the CLI) a 404, not a 500.
	pend, err := s.st.PendingProposals()
	if err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	if !pendingID.MatchString(id) || !slices.ContainsFunc(pend, func(p anamnesis.Pending) bool { return p.ID == id }) {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("no pending proposal %q: it may have been accepted or discarded already", id))
		return
	}
	if _, err := s.st.ReviewPending(r.Context(), id, accept); err != nil {
		s.fail(w, r, statusOf(err), fmt.Errorf("review %s: %w", id, err))
		return
	}
	if !accept {
		http.Redirect(w, r, "/review?discarded="+id, http.StatusSeeOther)
		return
	}
	s.afterWrite()
	http.Redirect(w, r, "/review?accepted="+id, http.StatusSeeOther)
}
