package gitsync

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// ErrForbidden is what an Authorizer returns for a caller it refuses.
var ErrForbidden = errors.New("not allowed to read this memory")

// Authorizer decides whether the caller at remoteAddr ("ip:port") may
// read this machine's memory, and names it for the log.
type Authorizer interface {
	Authorize(ctx context.Context, remoteAddr string) (who string, err error)
}

// MaxRequestBody bounds an upload-pack request (wants and haves of a
// small notes repository are a few KB).
const MaxRequestBody = 1 << 20

// Handler serves one repository read-only over git smart HTTP. Push
// (receive-pack) is always refused.
type Handler struct {
	GitDir  string // the repository's .git directory
	Auth    Authorizer
	Log     *slog.Logger
	Timeout time.Duration // per request (default 60 s)
}

func (h *Handler) log() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return h.Log
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	who, err := h.Auth.Authorize(ctx, r.RemoteAddr)
	if err != nil {
		h.log().Warn("refused", "remote", r.RemoteAddr, "path", r.URL.Path, "reason", err)
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	path := r.URL.Path
	switch {
	case strings.HasSuffix(path, "/info/refs") && r.Method == http.MethodGet:
		if svc := r.URL.Query().Get("service"); svc != transport.UploadPackServiceName {
			http.Error(w, "read-only: only git-upload-pack is served", http.StatusForbidden)
			return
		}
		h.advertise(ctx, w, who)
	case strings.HasSuffix(path, "/git-upload-pack") && r.Method == http.MethodPost:
		h.uploadPack(ctx, w, r, who)
	case strings.HasSuffix(path, "/git-receive-pack"):
		h.log().Warn("push refused", "remote", r.RemoteAddr, "who", who)
		http.Error(w, "read-only: nobody writes into another machine's memory; it fetches from you instead", http.StatusForbidden)
	default:
		http.NotFound(w, r)
	}
}

func (h *Handler) session() (transport.UploadPackSession, *filesystem.Storage, error) {
	st := filesystem.NewStorage(osfs.New(h.GitDir), cache.NewObjectLRUDefault())
	srv := server.NewServer(loader{servedRefs{st}})
	ep, err := transport.NewEndpoint("/")
	if err != nil {
		return nil, nil, err
	}
	sess, err := srv.NewUploadPackSession(ep, nil)
	return sess, st, err
}

type loader struct{ st storer.Storer }

func (l loader) Load(*transport.Endpoint) (storer.Storer, error) { return l.st, nil }

// servedRefs shows peers only HEAD and refs/heads/main. Other refs (the
// remote-tracking refs a concurrent fetch is writing, a user's branches)
// are none of their business, and go-git writes ref files in place: not
// reading them means never reading one half-written.
type servedRefs struct {
	*filesystem.Storage
}

func (s servedRefs) IterReferences() (storer.ReferenceIter, error) {
	var refs []*plumbing.Reference
	for _, n := range []plumbing.ReferenceName{plumbing.HEAD, plumbing.NewBranchReferenceName("main")} {
		if r, err := s.Storage.Reference(n); err == nil {
			refs = append(refs, r)
		}
	}
	return storer.NewReferenceSliceIter(refs), nil
}

func (h *Handler) advertise(ctx context.Context, w http.ResponseWriter, who string) {
	sess, _, err := h.session()
	if err != nil {
		h.fail(w, "open repository", err)
		return
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		h.fail(w, "advertise refs", err)
		return
	}
	ar.Prefix = [][]byte{[]byte("# service=git-upload-pack"), pktline.Flush}
	w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
	w.Header().Set("Cache-Control", "no-cache")
	if err := ar.Encode(w); err != nil {
		h.log().Warn("advertise", "who", who, "err", err)
	}
}

func (h *Handler) uploadPack(ctx context.Context, w http.ResponseWriter, r *http.Request, who string) {
	var body io.Reader = http.MaxBytesReader(w, r.Body, MaxRequestBody)
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, "bad gzip body", http.StatusBadRequest)
			return
		}
		defer gz.Close()
		body = io.LimitReader(gz, MaxRequestBody+1)
	}
	data, err := io.ReadAll(body)
	if err != nil || len(data) > MaxRequestBody {
		http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
		return
	}
	sess, st, err := h.session()
	if err != nil {
		h.fail(w, "open repository", err)
		return
	}
	defer sess.Close()
	req, done, err := parseUploadRequest(data, func(hash plumbing.Hash) bool { return st.HasEncodedObject(hash) == nil })
	if err != nil {
		h.log().Warn("bad upload-pack request", "who", who, "err", err)
		http.Error(w, "malformed upload-pack request: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
	w.Header().Set("Cache-Control", "no-cache")
	if !done {
		// A negotiation round of a stateless client: no common commit
		// acknowledged yet; it sends more haves or "done" next.
		pktline.NewEncoder(w).Encodef("NAK\n")
		return
	}
	if _, err := sess.AdvertisedReferencesContext(ctx); err != nil {
		h.fail(w, "advertise refs", err)
		return
	}
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		h.log().Warn("upload-pack", "who", who, "err", err)
		http.Error(w, "upload-pack: "+err.Error(), http.StatusBadRequest)
		return
	}
	defer resp.Close()
	if err := resp.Encode(w); err != nil {
		h.log().Warn("send pack", "who", who, "err", err)
	}
}

func (h *Handler) fail(w http.ResponseWriter, what string, err error) {
	h.log().Error(what, "err", err)
	http.Error(w, what+" failed", http.StatusInternalServerError)
}

// parseUploadRequest decodes wants and capabilities with go-git, and the
// haves itself: go-git v5's decoder ignores them, and haves naming
// objects this repository lacks (the client's own unpublished commits)
// must be dropped or go-git fails with "object not found".
func parseUploadRequest(data []byte, have func(plumbing.Hash) bool) (*packp.UploadPackRequest, bool, error) {
	sc := pktline.NewScanner(bytes.NewReader(data))
	var head bytes.Buffer
	enc := pktline.NewEncoder(&head)
	inHead := true
	done := false
	var haves []plumbing.Hash
	lines := 0
	for sc.Scan() {
		lines++
		if lines > 100000 {
			return nil, false, errors.New("too many pkt-lines")
		}
		line := sc.Bytes()
		if inHead {
			if len(line) == 0 {
				inHead = false
				if err := enc.Flush(); err != nil {
					return nil, false, err
				}
				continue
			}
			if err := enc.Encode(line); err != nil {
				return nil, false, err
			}
			continue
		}
		s := strings.TrimSpace(string(line))
		switch {
		case s == "":
		case s == "done":
			done = true
		case strings.HasPrefix(s, "have "):
			hs := strings.TrimPrefix(s, "have ")
			if len(hs) != 40 || !plumbing.IsHash(hs) {
				return nil, false, fmt.Errorf("bad have line %q", s)
			}
			if h := plumbing.NewHash(hs); have(h) {
				haves = append(haves, h)
			}
		default:
			return nil, false, fmt.Errorf("unexpected line %q", s)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, false, fmt.Errorf("pkt-line: %w", err)
	}
	if inHead {
		return nil, false, errors.New("no flush after the wants")
	}
	req := packp.NewUploadPackRequest()
	if err := req.UploadRequest.Decode(&head); err != nil {
		return nil, false, err
	}
	if len(req.Wants) == 0 {
		return nil, false, errors.New("no wants")
	}
	req.Haves = haves
	return req, done, nil
}

// LoopbackAuth lets callers on this machine's loopback addresses in, for
// tests and for serving to a local process; everything else is refused.
type LoopbackAuth struct{}

// Authorize implements Authorizer.
func (LoopbackAuth) Authorize(_ context.Context, remoteAddr string) (string, error) {
	host, _, err := net.SplitHostPort(remoteAddr)
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsLoopback() {
		return "loopback " + host, nil
	}
	return "", fmt.Errorf("%w: %s is not a loopback address", ErrForbidden, remoteAddr)
}
