package webui

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/note"
)

// versionView is one past version of a note, as the version page shows
// it, with what restoring it would change.
type versionView struct {
	Note    *note.Note // the note now
	Old     *note.Note // the version
	Version anamnesis.Version
	Front   string
	Diff    []DiffLine // from the note now to the version
	Base    string     // hash of the file now, so a restore is not stale
	Current bool       // the version is the note as it is
}

var errNoVersion = fmt.Errorf("no such version of this note: %w", anamnesis.ErrNotFound)

func (s *Server) loadVersion(r *http.Request) (versionView, error) {
	ctx := r.Context()
	n, path, data, err := s.st.GetFile(ctx, r.PathValue("id"))
	if err != nil {
		return versionView{}, err
	}
	v, ok, err := s.versionAt(ctx, path, r.PathValue("commit"))
	if err != nil {
		return versionView{}, err
	}
	if !ok || v.Deleted {
		return versionView{}, errNoVersion
	}
	old, err := note.Parse([]byte(v.Content))
	if err != nil {
		return versionView{}, fmt.Errorf("that version does not parse as a note: %w", err)
	}
	front, _ := splitFrontmatter([]byte(v.Content))
	return versionView{Note: n, Old: old, Version: v, Front: front, Base: hashOf(data),
		Diff: markWords(diffLines(n.Body, old.Body, 3)), Current: string(data) == v.Content}, nil
}

func (s *Server) versionPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.loadVersion(r)
	if err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	s.render(w, r, http.StatusOK, "version", "Version of "+d.Note.Title, "notes", d, "")
}

// restore writes a past version's title, body, project and tags back as
// the note's new version: an ordinary edit through the Store (a new
// commit; the history keeps everything in between). It is refused when
// the note changed since the page was made, as an edit is.
func (s *Server) restore(w http.ResponseWriter, r *http.Request) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	d, err := s.loadVersion(r)
	if err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	if r.PostForm.Get("base") != d.Base {
		s.fail(w, r, http.StatusConflict, errors.New("the note changed since that page was made; nothing was restored: open the version again"))
		return
	}
	n := d.Note
	n.Title, n.Body, n.Tags, n.Project = d.Old.Title, d.Old.Body, d.Old.Tags, d.Old.Project
	if _, err := s.st.Update(r.Context(), n); err != nil {
		s.fail(w, r, statusOf(err), err)
		return
	}
	s.afterWrite()
	http.Redirect(w, r, "/note/"+n.ID+"?done=restored", http.StatusSeeOther)
}
