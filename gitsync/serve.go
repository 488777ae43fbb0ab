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
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/revlist"
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

// MaxConcurrentPacks bounds the packs Handler builds at once; other
// fetches wait for a turn. go-git's pack encoder holds every object of
// the pack it builds (the delta search reads them all) and the storage
// an object cache, so each fetch of a 5,000-note memory took tens of MB
// and 30 at once took the server's heap past 700 MB; two cores build no
// faster with more than a few at once anyway.
const MaxConcurrentPacks = 4

// serveObjectCache is the object cache of one fetch's storage: go-git's
// default (96 MiB) is meant for one long-lived repository, not for one
// per request.
const serveObjectCache = 8 << 20

// Handler serves one repository read-only over git smart HTTP. Push
// (receive-pack) is always refused.
type Handler struct {
	GitDir string // the repository's .git directory
	Auth   Authorizer
	Log    *slog.Logger
	// Timeout bounds a request's silence, not its length: a fetch fails
	// when one write of the pack does not go through for this long
	// (default 60 s), so a peer on a slow link gets a memory of any size
	// and one that stops reading frees its turn. A write may wait while
	// the kernel's send buffer drains (up to a third of 4 MB on Linux):
	// keep it well above that at the slowest link served. Waiting for a
	// turn (MaxPacks) is bounded by it too.
	Timeout time.Duration
	// MaxPacks bounds the packs built at once (default
	// MaxConcurrentPacks).
	MaxPacks int

	slotsOnce sync.Once
	slots     chan struct{}
}

func (h *Handler) timeout() time.Duration {
	if h.Timeout <= 0 {
		return 60 * time.Second
	}
	return h.Timeout
}

// turn waits for one of the MaxPacks turns to build a pack, for at most
// the timeout; release gives it back.
func (h *Handler) turn(ctx context.Context) (release func(), err error) {
	h.slotsOnce.Do(func() {
		n := h.MaxPacks
		if n <= 0 {
			n = MaxConcurrentPacks
		}
		h.slots = make(chan struct{}, n)
	})
	t := time.NewTimer(h.timeout())
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return func() { <-h.slots }, nil
	case <-t.C:
		return nil, fmt.Errorf("all %d turns busy for %s", cap(h.slots), h.timeout())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *Handler) log() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return h.Log
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Authorization and the advertisement are small: a total bound. The
	// pack is bounded by silence (see uploadPack).
	actx, cancel := context.WithTimeout(r.Context(), h.timeout())
	defer cancel()
	who, err := h.Auth.Authorize(actx, r.RemoteAddr)
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
		h.advertise(actx, w, who)
	case strings.HasSuffix(path, "/git-upload-pack") && r.Method == http.MethodPost:
		h.uploadPack(r.Context(), w, r, who)
	case strings.HasSuffix(path, "/git-receive-pack"):
		h.log().Warn("push refused", "remote", r.RemoteAddr, "who", who)
		http.Error(w, "read-only: nobody writes into another machine's memory; it fetches from you instead", http.StatusForbidden)
	default:
		http.NotFound(w, r)
	}
}

func (h *Handler) session() (transport.UploadPackSession, *filesystem.Storage, error) {
	st := filesystem.NewStorage(osfs.New(h.GitDir), cache.NewObjectLRU(serveObjectCache))
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
	release, err := h.turn(ctx)
	if err != nil {
		h.log().Warn("upload-pack: no turn", "who", who, "err", err)
		w.Header().Set("Retry-After", "10")
		http.Error(w, "busy: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer release()
	ctx, iw, stop := h.watchWrites(ctx, w)
	defer stop()
	// go-git's own UploadPack searches a delta window of 10 over every
	// object before the first byte goes out (seconds of silence and tens
	// of MB for a few thousand notes); notes rarely delta against each
	// other, so the pack is written as the objects are read (window 0,
	// as our pushes do), the same bytes go-git sends otherwise: NAK, then
	// the pack without a sideband (go-git's server offers none).
	objs, err := objectsToSend(st, req)
	if err != nil {
		h.log().Warn("upload-pack", "who", who, "err", err)
		http.Error(w, "upload-pack: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := pktline.NewEncoder(iw).Encodef("NAK\n"); err != nil {
		h.log().Warn("send pack", "who", who, "err", err)
		return
	}
	if _, err := packfile.NewEncoder(iw, st, false).Encode(objs, 0); err != nil {
		h.log().Warn("send pack", "who", who, "err", err, "silent", iw.Stalled(), "canceled", ctx.Err() != nil)
	}
}

// objectsToSend lists what a fetch gets: the objects reachable from its
// wants and not from its haves (which parseUploadRequest kept only when
// this repository has them).
func objectsToSend(st storer.EncodedObjectStorer, req *packp.UploadPackRequest) ([]plumbing.Hash, error) {
	if len(req.Shallows) > 0 || req.Depth != nil && !req.Depth.IsZero() {
		return nil, errors.New("shallow fetches are not served")
	}
	haves, err := revlist.Objects(st, req.Haves, nil)
	if err != nil {
		return nil, err
	}
	return revlist.Objects(st, req.Wants, haves)
}

// idleResponse is a response whose writes are bounded by silence: each
// write must finish within the timeout (a write deadline pushed forward
// as data moves), and the context ends once nothing was written for the
// timeout (go-git building the pack, or a client that stopped reading).
type idleResponse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	watch   *idleWatch
}

func (h *Handler) watchWrites(ctx context.Context, w http.ResponseWriter) (context.Context, *idleResponse, func()) {
	wctx, watch, stop := watchIdle(ctx, h.timeout(), Bounds{ProgressOnly: time.Duration(1<<63 - 1)})
	return wctx, &idleResponse{w: w, rc: http.NewResponseController(w), timeout: h.timeout(), watch: watch}, stop
}

func (r *idleResponse) Write(p []byte) (int, error) {
	// Not every ResponseWriter has deadlines (a test recorder); the
	// watch still ends the context.
	_ = r.rc.SetWriteDeadline(time.Now().Add(r.timeout))
	n, err := r.w.Write(p)
	if n > 0 {
		r.watch.touchData()
	}
	return n, err
}

// Stalled reports whether the response was cut for silence.
func (r *idleResponse) Stalled() bool { return r.watch.Stalled() }

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
