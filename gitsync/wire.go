package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage"
)

// This file talks the git protocol itself, through go-git's transport
// sessions, instead of calling Remote.Fetch and Remote.Push. Two things
// need it: go-git picks the transport from a process-wide registry, so a
// connection that reports each byte it moves (what an inactivity timeout
// needs) cannot be given to one fetch without changing every other; and
// the branch to sync is chosen from the same advertisement the fetch uses
// (the hub's HEAD), in one round trip.

// idleWatch cancels a transfer once no data has moved for timeout: a
// large first sync over a slow link takes as long as it takes, a hub
// that stops answering is given up on after timeout of silence. It keeps
// a second clock for the transfer's payload (pack data, fetched or
// pushed): a remote's progress messages keep the first clock going but
// not the second, so a remote that sends nothing but progress is given
// up on after bounds.ProgressOnly.
type idleWatch struct {
	timeout  time.Duration
	bounds   Bounds
	last     atomic.Int64 // UnixNano of the last bytes moved
	lastData atomic.Int64 // UnixNano of the last payload bytes moved
	stalled  atomic.Bool
	reason   atomic.Pointer[string]
	cancel   context.CancelFunc

	mu    sync.Mutex
	conns map[*idleConn]struct{}
}

// watchIdle returns a context that ends when ctx does or when the watch
// sees no progress for timeout (or only progress messages for
// bounds.ProgressOnly), and a stop function to call when the transfer is
// over.
func watchIdle(ctx context.Context, timeout time.Duration, bounds Bounds) (context.Context, *idleWatch, func()) {
	wctx, cancel := context.WithCancel(ctx)
	w := &idleWatch{timeout: timeout, bounds: bounds.withDefaults(), cancel: cancel, conns: map[*idleConn]struct{}{}}
	w.touchData()
	tick := min(max(min(timeout, w.bounds.ProgressOnly)/10, 10*time.Millisecond), time.Second)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-wctx.Done():
				return
			case <-t.C:
				w.pollSendQueues()
				var why string
				switch {
				case time.Since(time.Unix(0, w.last.Load())) >= w.timeout:
					why = fmt.Sprintf("no data for %s", w.timeout)
				case time.Since(time.Unix(0, w.lastData.Load())) >= w.bounds.ProgressOnly:
					why = fmt.Sprintf("only progress messages and no data for %s", w.bounds.ProgressOnly)
				default:
					continue
				}
				w.reason.Store(&why)
				w.stalled.Store(true)
				cancel()
				return
			}
		}
	}()
	var once sync.Once
	return wctx, w, func() { once.Do(func() { close(done); cancel() }) }
}

// touch records progress: bytes moved.
func (w *idleWatch) touch() { w.last.Store(time.Now().UnixNano()) }

// touchData records payload moved (which is also progress).
func (w *idleWatch) touchData() {
	now := time.Now().UnixNano()
	w.last.Store(now)
	w.lastData.Store(now)
}

// Stalled reports whether the watch ended the transfer.
func (w *idleWatch) Stalled() bool { return w.stalled.Load() }

// Reason says why the watch ended the transfer, in a few words ("no data
// for 1m0s"); "" while it has not.
func (w *idleWatch) Reason() string {
	if r := w.reason.Load(); r != nil {
		return *r
	}
	return ""
}

// pollSendQueues counts bytes leaving the kernel's send buffer as
// progress: a push hands its whole pack to the socket at once (loopback
// and fast local links buffer megabytes), and the application then waits
// for the answer while the data still drains over the slow link.
func (w *idleWatch) pollSendQueues() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.conns {
		q, ok := sendQueue(c.Conn)
		if !ok {
			continue
		}
		if q < c.queued {
			w.touchData() // a pushed pack draining
		}
		c.queued = q
	}
}

// dialer returns a DialContext that wraps every connection so its reads
// and writes count as progress; via opens the connections when set, a
// net.Dialer otherwise.
func (w *idleWatch) dialer(via DialFunc) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if via == nil {
		via = (&net.Dialer{Timeout: w.timeout, KeepAlive: 30 * time.Second}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := via(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		w.touch()
		ic := &idleConn{Conn: c, w: w}
		w.mu.Lock()
		w.conns[ic] = struct{}{}
		w.mu.Unlock()
		return ic, nil
	}
}

type idleConn struct {
	net.Conn
	w      *idleWatch
	queued int // bytes in the send queue at the last poll (guarded by w.mu)
	closed sync.Once
}

func (c *idleConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.w.touch()
	}
	return n, err
}

func (c *idleConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.w.touch()
	}
	return n, err
}

func (c *idleConn) Close() error {
	c.closed.Do(func() {
		c.w.mu.Lock()
		delete(c.w.conns, c)
		c.w.mu.Unlock()
	})
	return c.Conn.Close()
}

// progressReader and progressWriter count data through the transport's
// own streams (pack data, the server's progress messages) as progress:
// that is what the watch sees for ssh and local hubs, whose connections
// go-git makes itself. A progressReader over a pack (data) moves the
// payload clock too; progress messages never do.
type progressReader struct {
	r    io.Reader
	w    *idleWatch
	data bool
}

func (p progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		if p.data {
			p.w.touchData()
		} else {
			p.w.touch()
		}
	}
	return n, err
}

// progressWriter takes the server's progress messages (sideband channel
// 2): they show the server alive, and keep is where the last of them are
// kept (a push's refusal by a hook is explained there), when set.
type progressWriter struct {
	w    *idleWatch
	keep *tailBuffer
}

func (p progressWriter) Write(b []byte) (int, error) {
	p.w.touch()
	if p.keep != nil {
		p.keep.Write(b)
	}
	return len(b), nil
}

// tailBuffer keeps the last max bytes written to it: what a hub said
// before it refused a push, however much it said.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) > t.max {
		p = p[len(p)-t.max:]
	}
	if over := len(t.b) + len(p) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	t.b = append(t.b, p...)
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// DialFunc opens a connection like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// wire is one remote for one fetch, push or listing: its endpoint, a
// transport of its own and the watch over it.
type wire struct {
	ep    *transport.Endpoint
	tr    transport.Transport
	watch *idleWatch
	close func()
}

// dial prepares a transport for remote (credentials stay out of the
// endpoint; they come as an auth method). auth decides the address: for
// ssh, the remote with ~/.ssh/config applied (see remoteAuth.dialURL).
// For http(s) the transport is this call's own, with connections the
// watch sees, opened by via when it is set (a tailscaled in userspace
// mode is how this machine reaches its peers) and by a plain dialer
// otherwise; ssh and local hubs use go-git's, watched through their data
// streams.
func dial(remote string, auth *remoteAuth, w *idleWatch, via DialFunc) (*wire, error) {
	u := withoutSecret(remote)
	if d := auth.dialURL(); d != "" {
		u = d
	}
	ep, err := transport.NewEndpoint(u)
	if err != nil {
		return nil, fmt.Errorf("remote %q is not a git URL or path: %w", Redact(remote), err)
	}
	switch ep.Protocol {
	case "http", "https":
		base, ok := nethttp.DefaultTransport.(*nethttp.Transport)
		if !ok {
			base = &nethttp.Transport{Proxy: nethttp.ProxyFromEnvironment}
		}
		ht := base.Clone() // proxy settings, TLS defaults, HTTP/2 as usual
		ht.DialContext = w.dialer(via)
		if via != nil {
			ht.Proxy = nil // the dialer is the way to the peer
		}
		return &wire{ep: ep, tr: githttp.NewClient(&nethttp.Client{Transport: withRemoteQuery(ht, remote)}), watch: w, close: ht.CloseIdleConnections}, nil
	}
	if via != nil {
		return nil, fmt.Errorf("peer %s: only http(s) peers can be reached through tailscaled", Redact(remote))
	}
	tr, err := client.NewClient(ep)
	if err != nil {
		return nil, fmt.Errorf("remote %s: %w", Redact(remote), err)
	}
	return &wire{ep: ep, tr: tr, watch: w, close: func() {}}, nil
}

// advert is what a remote advertised: its branches and where its HEAD
// points (when the server says, as git does with the symref capability).
type advert struct {
	refs map[plumbing.ReferenceName]plumbing.Hash
	head plumbing.ReferenceName
}

func readAdvert(ar *packp.AdvRefs) (advert, error) {
	a := advert{refs: map[plumbing.ReferenceName]plumbing.Hash{}}
	all, err := ar.AllReferences()
	if err != nil {
		return a, err
	}
	for name, ref := range all {
		switch {
		case name == plumbing.HEAD && ref.Type() == plumbing.SymbolicReference:
			a.head = ref.Target()
		case ref.Type() == plumbing.HashReference && name.IsBranch():
			a.refs[name] = ref.Hash()
		}
	}
	return a, nil
}

// branches lists the advertised branch names, sorted.
func (a advert) branches() []string {
	var out []string
	for n := range a.refs {
		out = append(out, n.Short())
	}
	sort.Strings(out)
	return out
}

// chooseBranch picks the hub's branch a sync follows: main when the hub
// has it (what the Python tool and every earlier sync use), else the
// hub's default branch (HEAD: a hub created with `master`, or any other
// name), else its only branch; an empty hub gets main. A hub with several
// branches, none of them main and no default, gets main, and why says so.
func (a advert) chooseBranch() (branch, why string) {
	if _, ok := a.refs[branchRef]; ok || len(a.refs) == 0 {
		return Branch, ""
	}
	if _, ok := a.refs[a.head]; ok && a.head.IsBranch() {
		return a.head.Short(), fmt.Sprintf("the hub has no %s; syncing with its default branch %s", Branch, a.head.Short())
	}
	if b := a.branches(); len(b) == 1 {
		return b[0], fmt.Sprintf("the hub has no %s; syncing with its only branch %s", Branch, b[0])
	}
	return Branch, fmt.Sprintf("the hub has branches %s but no %s and no default branch; created %s", strings.Join(a.branches(), ", "), Branch, Branch)
}

// listRefs asks the remote for its upload-pack advertisement.
func (wr *wire) listRefs(ctx context.Context, auth transport.AuthMethod) (advert, error) {
	sess, err := wr.tr.NewUploadPackSession(wr.ep, auth)
	if err != nil {
		return advert{}, err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return advert{}, err
	}
	return readAdvert(ar)
}

// fetchBranch fetches the branch choose picks from the advertisement
// into g's objects (st is a storage over g's .git, whose refs say what
// we have) and returns the branch, its hash (zero when the hub has no
// such branch yet) and whether objects were transferred.
func (wr *wire) fetchBranch(ctx context.Context, g *Repo, st storage.Storer, auth transport.AuthMethod,
	choose func(advert) string) (branch string, head plumbing.Hash, fetched bool, err error) {
	sess, err := wr.tr.NewUploadPackSession(wr.ep, auth)
	if err != nil {
		return "", plumbing.ZeroHash, false, err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return Branch, plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return "", plumbing.ZeroHash, false, err
	}
	adv, err := readAdvert(ar)
	if err != nil {
		return "", plumbing.ZeroHash, false, err
	}
	branch = choose(adv)
	want, ok := adv.refs[plumbing.NewBranchReferenceName(branch)]
	if !ok {
		return branch, plumbing.ZeroHash, false, nil
	}
	// Through our reader: go-git decoded every pack's index to find an
	// object it does not have (80 ms of a pull at 100,000 notes).
	objs := g.openObjects()
	if objs.has(want) {
		objs.Close()
		return branch, want, false, nil // nothing new
	}
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	req.Wants = []plumbing.Hash{want}
	req.Haves, err = haves(st, adv, objs.parents)
	objs.Close()
	if err != nil {
		return branch, plumbing.ZeroHash, false, err
	}
	resp, err := sess.UploadPack(ctx, req)
	if errors.Is(err, transport.ErrEmptyUploadPackRequest) {
		return branch, want, false, nil
	}
	if err != nil {
		return branch, plumbing.ZeroHash, false, err
	}
	defer resp.Close()
	var r io.Reader = progressReader{r: resp, w: wr.watch}
	// The server's progress lines ("Counting objects") are not asked
	// away: while it prepares a large pack they are the only sign of life
	// (for bounds.ProgressOnly at most; see idleWatch).
	if req.Capabilities.Supports(capability.Sideband64k) {
		d := sideband.NewDemuxer(sideband.Sideband64k, r)
		d.Progress = progressWriter{w: wr.watch}
		r = d
	} else if req.Capabilities.Supports(capability.Sideband) {
		d := sideband.NewDemuxer(sideband.Sideband, r)
		d.Progress = progressWriter{w: wr.watch}
		r = d
	}
	if err := g.storePack(st, r, defaultPackLimits(wr.watch.bounds), wr.watch.touchData); err != nil {
		return branch, plumbing.ZeroHash, false, err
	}
	return branch, want, true, nil
}

// maxHaves bounds how far back each local ref is walked for "have" lines
// when the walk meets no commit a remote is known to have.
const maxHaves = 100

// haves lists commits st has, for the server to leave out of the pack:
// the tips of local branches and tracking refs, and their ancestors
// (parents gives a commit's), at most maxHaves a tip, leaving out what a
// remote is known to have: below a commit it advertised now, and what the
// tip of a tracking ref (what a remote had at the last fetch) reaches.
// Every have costs the server: git upload-pack takes all of one request's
// haves and excludes what each reaches, and at 100,000 notes a pull
// sending a hundred of them cost the hub 0.6 s of CPU, against 0.1 s for
// a few.
func haves(st storage.Storer, adv advert, parents func(plumbing.Hash) ([]plumbing.Hash, error)) ([]plumbing.Hash, error) {
	advertised := map[plumbing.Hash]bool{}
	for _, h := range adv.refs {
		advertised[h] = true
	}
	iter, err := st.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("list local refs: %w", err)
	}
	var tips, tracked []plumbing.Hash
	err = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference && (r.Name().IsBranch() || r.Name().IsRemote()) {
			tips = append(tips, r.Hash())
			if r.Name().IsRemote() {
				tracked = append(tracked, r.Hash())
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list local refs: %w", err)
	}
	// What the tracking refs' tips reach (as far as a walk goes) is known
	// to their remotes; the tips themselves are sent.
	known := map[plumbing.Hash]bool{}
	for _, tip := range tracked {
		walkCommits(tip, parents, maxHaves, func(h plumbing.Hash) bool {
			if known[h] {
				return false
			}
			known[h] = true
			return true
		})
	}
	seen := map[plumbing.Hash]bool{}
	for _, tip := range tips {
		walkCommits(tip, parents, maxHaves, func(h plumbing.Hash) bool {
			if seen[h] || (known[h] && !slices.Contains(tracked, h)) {
				return false
			}
			seen[h] = true
			return !advertised[h] && !known[h]
		})
	}
	out := make([]plumbing.Hash, 0, len(seen))
	for h := range seen {
		out = append(out, h)
	}
	return out, nil
}

// walkCommits visits tip and its ancestors, newest first, depth first,
// the first parent before the others, at most limit of them: visit says
// whether to go on below a commit. A commit whose parents cannot be read
// (one we lack: a ref to it says nothing) is not visited.
func walkCommits(tip plumbing.Hash, parents func(plumbing.Hash) ([]plumbing.Hash, error), limit int, visit func(plumbing.Hash) bool) {
	stack := []plumbing.Hash{tip}
	for n := 0; len(stack) > 0 && n < limit; {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		ps, err := parents(h)
		if err != nil || !visit(h) {
			continue
		}
		n++
		for i := len(ps) - 1; i >= 0; i-- {
			stack = append(stack, ps[i])
		}
	}
}

// errNonFastForward is a push the remote would refuse: someone pushed
// first; fetch, merge and push again.
var errNonFastForward = errors.New("non-fast-forward update")

// pushBranch sets the remote's branch to local, sending the objects it
// lacks. A remote branch that moved to a commit local does not contain is
// errNonFastForward; nothing to send is git.NoErrAlreadyUpToDate's case,
// reported as pushed=false.
func (wr *wire) pushBranch(ctx context.Context, st storage.Storer, auth transport.AuthMethod, branch string, local plumbing.Hash) (pushed bool, err error) {
	sess, err := wr.tr.NewReceivePackSession(wr.ep, auth)
	if err != nil {
		return false, err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return false, err
	}
	adv, err := readAdvert(ar)
	if err != nil {
		return false, err
	}
	target := plumbing.NewBranchReferenceName(branch)
	old := adv.refs[target]
	if old == local {
		return false, nil
	}
	if !old.IsZero() {
		ff, err := isAncestor(st, old, local)
		if err != nil {
			return false, err
		}
		if !ff {
			return false, errNonFastForward
		}
	}
	req, err := pushRequest(ar, &packp.Command{Name: target, Old: old, New: local})
	if err != nil {
		return false, err
	}
	if err := wr.sendPack(ctx, sess, st, req, ar, adv, local); err != nil {
		return false, err
	}
	return true, nil
}

// pushRequest is the update of one branch. With a sideband, the hub's
// hooks and fsck speak on channel 2, where their reason for a refusal
// is kept (without it, git sends it to a stderr nobody reads).
func pushRequest(ar *packp.AdvRefs, cmd *packp.Command) (*packp.ReferenceUpdateRequest, error) {
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	var err error
	switch {
	case ar.Capabilities.Supports(capability.Sideband64k):
		err = req.Capabilities.Set(capability.Sideband64k)
	case ar.Capabilities.Supports(capability.Sideband):
		err = req.Capabilities.Set(capability.Sideband)
	}
	if err != nil {
		return nil, fmt.Errorf("push request: %w", err)
	}
	req.Commands = []*packp.Command{cmd}
	return req, nil
}

// sendPack sends req with a pack of the objects local has that the
// advertised refs lack, and returns the hub's refusal if it refused.
func (wr *wire) sendPack(ctx context.Context, sess transport.ReceivePackSession, st storage.Storer, req *packp.ReferenceUpdateRequest,
	ar *packp.AdvRefs, adv advert, local plumbing.Hash) error {
	var known []plumbing.Hash
	for _, h := range adv.refs {
		known = append(known, h)
	}
	hashes, err := objectsToPush(ctx, st, local, known)
	if err != nil {
		return fmt.Errorf("list objects to push: %w", err)
	}
	cfg, err := st.Config()
	if err != nil {
		return fmt.Errorf("read git config: %w", err)
	}
	pr, pw := io.Pipe()
	encoded := make(chan error, 1)
	go func() {
		_, err := packfile.NewEncoder(pw, st, !ar.Capabilities.Supports(capability.OFSDelta)).Encode(hashes, cfg.Pack.Window)
		pw.CloseWithError(err)
		encoded <- err
	}()
	req.Packfile = io.NopCloser(progressReader{r: pr, w: wr.watch, data: true})
	said := &tailBuffer{max: 4 << 10} // a hook's or fsck's reason comes as progress messages
	req.Progress = progressWriter{w: wr.watch, keep: said}
	rs, err := sess.ReceivePack(ctx, req)
	pr.Close() // unblocks the encoder if the transport stopped reading
	if eerr := <-encoded; err == nil && eerr != nil && !errors.Is(eerr, io.ErrClosedPipe) {
		err = fmt.Errorf("encode pack: %w", eerr)
	}
	if rs != nil {
		if rerr := rs.Error(); rerr != nil {
			return newPushRefusal(rerr, said.String())
		}
	}
	return err
}

// pushRefusal is a hub's answer to a push that it refused: its status
// for the branch ("pre-receive hook declined", "non-fast-forward") and
// what it said before (a hook's output, fsck's complaint).
type pushRefusal struct {
	status string
	said   string
}

func newPushRefusal(status error, said string) *pushRefusal {
	return &pushRefusal{status: status.Error(), said: said}
}

// stale reports a refusal that a fetch, merge and push again can fix:
// someone else moved the branch since the hub's advertisement (git says
// "non-fast-forward", "fetch first", "stale info", or that the ref is
// not at the old value any more: "failed to update ref", "cannot lock
// ref ... is at X but expected Y").
func (r *pushRefusal) stale() bool {
	msg := strings.ToLower(r.status)
	for _, s := range []string{"non-fast-forward", "fetch first", "stale info", "failed to update ref", "cannot lock ref", "failed to lock"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Error is the hub's reason in one line: its messages (the "remote:"
// lines git shows) then its status, control characters and repeats
// dropped, cut to a length a terminal line holds.
func (r *pushRefusal) Error() string {
	status := r.status
	// go-git's "command error on refs/heads/main: <status>" and
	// "unpack error: <status>": the status is the hub's part.
	if rest, ok := strings.CutPrefix(status, "command error on "); ok {
		if _, st, ok := strings.Cut(rest, ": "); ok {
			status = st
		}
	}
	status = strings.TrimPrefix(status, "unpack error: ")
	var lines []string
	seen := map[string]bool{}
	for _, l := range strings.FieldsFunc(r.said, func(c rune) bool { return c == '\n' || c == '\r' }) {
		l = strings.TrimSpace(strings.Map(func(c rune) rune {
			if c < ' ' || c == 0x7f {
				return -1
			}
			return c
		}, l))
		if l == "" || seen[l] {
			continue
		}
		seen[l] = true
		lines = append(lines, l)
	}
	msg := strings.Join(lines, "; ")
	const most = 400
	if len(msg) > most {
		msg = "..." + msg[len(msg)-most:]
	}
	if msg == "" {
		return status
	}
	return msg + " (" + status + ")"
}

// isAncestor reports whether old is new or one of its ancestors; false
// when old is not in st at all (the remote moved to a commit we never
// fetched). Breadth first: after a merge, old is new's second parent,
// met at once, where a walk down the first parent went through all of
// our own history first.
func isAncestor(st storage.Storer, old, new plumbing.Hash) (bool, error) {
	if _, err := st.EncodedObject(plumbing.CommitObject, old); err != nil {
		return false, nil
	}
	seen := map[plumbing.Hash]bool{new: true}
	for queue := []plumbing.Hash{new}; len(queue) > 0; queue = queue[1:] {
		if queue[0] == old {
			return true, nil
		}
		c, err := object.GetCommit(st, queue[0])
		if err != nil {
			return false, fmt.Errorf("read commit %s: %w", queue[0], err)
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false, nil
}
