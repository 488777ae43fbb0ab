package gitsync

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Options tune one sync. Zero values take the defaults.
type Options struct {
	Remote     string        // URL or path of the remote; "" syncs nothing, commits only
	Peers      []string      // URLs of peers to fetch from and merge (the mesh); never pushed to
	Timeout    time.Duration // a fetch or push fails after this long without data moving (default 60 s)
	LockWait   time.Duration // how long to wait for another sync (default 30 s)
	MaxRetries int           // fetch-merge-push rounds when a push is rejected (default 5)
	// Progress, if set, is told each stage as it starts ("committing
	// local notes", "fetching", "merging", "pushing"), so a long first
	// sync can show what it is doing. It never sees a URL.
	Progress func(stage string)
	// Dial, if set, opens the connections of peer fetches (http and https
	// peers): a tailscaled in userspace mode is the only way to this
	// machine's tailnet peers. The hub is always reached directly.
	Dial DialFunc
	// Bounds limit what the hub and peers may send (see MaxPackBytes and
	// the other bounds); zero fields take the defaults.
	Bounds Bounds
}

func (o *Options) defaults() {
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.LockWait <= 0 {
		o.LockWait = 30 * time.Second
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 5
	}
}

// Report is what one sync did.
type Report struct {
	Committed      bool     `json:"committed"`
	Fetched        bool     `json:"fetched"`
	Merged         bool     `json:"merged"`
	FastForward    bool     `json:"fast_forward"`
	ConflictCopies []string `json:"conflict_copies"`
	Pushed         bool     `json:"pushed"`
	Old            string   `json:"old_head"`
	Head           string   `json:"head"`
	Remote         string   `json:"remote"`
	Rounds         int      `json:"rounds"`
	// Branch is the hub's branch this sync followed: main, or the hub's
	// default branch when it has no main (a hub created with master);
	// BranchNote says why when it is not main. The local branch is main
	// either way, as the Python tool expects.
	Branch     string       `json:"branch,omitempty"`
	BranchNote string       `json:"branch_note,omitempty"`
	Peers      []PeerResult `json:"peers,omitempty"`
	// TooLarge lists files over MaxBlobBytes that were left out of the
	// commit: other machines refuse such files, so they are not synced.
	TooLarge []string `json:"too_large,omitempty"`
	// PacksMerged counts the packs this sync merged into one
	// (packmerge.go); PackError says why merging failed (the sync itself
	// did not).
	PacksMerged int    `json:"packs_merged,omitempty"`
	PackError   string `json:"pack_error,omitempty"`
}

// Sync runs one cycle: lock, commit local changes, fetch main from the
// remote, merge it, push, and retry from the fetch (a bounded number of
// times) when someone else pushed first. Local notes are committed before
// anything touches the network, so a failed fetch or push loses nothing.
//
// No credential leaves where the user put it: the report and every error
// show remotes redacted (see Redact), and .git/config keeps the remote
// without its secret.
func (g *Repo) Sync(ctx context.Context, opts Options) (rep Report, err error) {
	opts.defaults()
	defer func() { err = redactErr(err, append([]string{opts.Remote}, opts.Peers...)...) }()
	rep = Report{Remote: Redact(opts.Remote), ConflictCopies: []string{}}
	lock, err := AcquireAs(ctx, g.gitDir, opts.LockWait, PurposeSync)
	if err != nil {
		return rep, err
	}
	defer lock.Release()

	if _, err := repairTrackingRefs(g.gitDir); err != nil {
		return rep, err
	}
	g.removeOrphanPackFiles()
	if err := g.configure(opts.Remote, opts.Remote != ""); err != nil {
		return rep, err
	}
	before, err := g.head()
	if err != nil {
		return rep, err
	}
	rep.Old = before.String()
	opts.Progress("committing local notes")
	g.tooLarge = nil
	head, committed, err := g.commitAll(ctx)
	rep.TooLarge = g.tooLarge
	sort.Strings(rep.TooLarge) // the worktree is listed in no order
	if err != nil {
		return rep, fmt.Errorf("commit local notes: %w", err)
	}
	rep.Committed, rep.Head = committed, head.String()
	if len(opts.Peers) > 0 {
		if err := g.syncPeersInto(ctx, opts, &rep); err != nil {
			return rep, err
		}
	}
	if opts.Remote != "" {
		if err := g.syncHub(ctx, opts, &rep); err != nil {
			return rep, err
		}
	}
	// Each fetch left a pack; keep their number down (packmerge.go).
	n, perr := g.mergePacks(ctx, g.now())
	rep.PacksMerged = n
	if perr != nil {
		rep.PackError = perr.Error()
	}
	return rep, nil
}

// syncPeersInto fetches from and merges the mesh's peers, and records in
// rep what that did.
func (g *Repo) syncPeersInto(ctx context.Context, opts Options, rep *Report) error {
	peers, conflicts, err := g.syncPeers(ctx, opts.Peers, opts)
	rep.Peers = peers
	rep.ConflictCopies = append(rep.ConflictCopies, conflicts...)
	for _, p := range peers {
		rep.Fetched = rep.Fetched || p.Fetched
		rep.Merged = rep.Merged || p.Merged
	}
	if h, herr := g.head(); herr == nil {
		rep.Head = h.String()
	}
	return err
}

// syncHub fetches main from the hub, merges it and pushes, from the
// fetch again (a bounded number of times) when someone else pushed
// first, and records in rep what that did.
func (g *Repo) syncHub(ctx context.Context, opts Options, rep *Report) error {
	auth, err := newRemoteAuth(opts.Remote, g.dir)
	if err != nil {
		return err
	}
	for round := 1; round <= opts.MaxRetries; round++ {
		rep.Rounds = round
		if done, err := g.hubRound(ctx, opts, auth, rep, round); done || err != nil {
			return err
		}
	}
	return fmt.Errorf("push to %s: rejected %d times (others keep pushing); local notes are committed, run sync again", Redact(opts.Remote), opts.MaxRetries)
}

// hubRound is one fetch, merge and push. done: the sync is over (pushed,
// nothing to push, or a refusal another round cannot fix); otherwise
// another round starts from the fetch.
func (g *Repo) hubRound(ctx context.Context, opts Options, auth *remoteAuth, rep *Report, round int) (done bool, err error) {
	opts.Progress("fetching")
	packs := g.packFiles()
	branch, why, fetched, theirs, err := g.fetch(ctx, opts, auth)
	if err != nil {
		return true, err
	}
	rep.Fetched = rep.Fetched || fetched
	rep.Branch, rep.BranchNote = branch, why
	if g.beforeMerge != nil {
		g.beforeMerge()
	}
	opts.Progress("merging")
	res, again, err := g.mergeFetched(ctx, opts, rep, round, packs, branch, theirs)
	if again || err != nil {
		return err != nil, err
	}
	rep.Merged = rep.Merged || res.Merged
	rep.FastForward = rep.FastForward || res.FastFwd
	rep.ConflictCopies = append(rep.ConflictCopies, res.Conflicts...)
	rep.Head = res.New.String()
	if res.New.IsZero() || res.New == Hash(theirs) {
		return true, nil // nothing of ours the remote lacks
	}
	opts.Progress("pushing")
	pushed, retry, err := g.push(ctx, opts, auth, branch, plumbing.Hash(res.New))
	if err != nil {
		return true, err
	}
	rep.Pushed = pushed
	return pushed || !retry, nil
}

// mergeFetched merges the hub's branch (theirs, fetched into packs other
// than those listed before the fetch). again: a note was edited while it
// merged (nothing was touched); the edit is committed and the round
// starts over.
func (g *Repo) mergeFetched(ctx context.Context, opts Options, rep *Report, round int, packs map[string]bool, branch string, theirs plumbing.Hash) (res MergeResult, again bool, err error) {
	res, err = g.Merge(ctx, Hash(theirs))
	switch {
	case errors.Is(err, ErrDirtyPath) && round < opts.MaxRetries:
		_, c, cerr := g.commitAll(ctx)
		if cerr != nil {
			return res, false, fmt.Errorf("commit local notes: %w", cerr)
		}
		rep.Committed = rep.Committed || c
		return res, true, nil
	case errors.Is(err, ErrRefused):
		g.discardRefused(packs, theirs)
		g.forgetTracking(RemoteName, branch)
		return res, false, refusedFrom("hub "+Redact(opts.Remote), err)
	case err != nil:
		return res, false, fmt.Errorf("merge %s: %w", RemoteName+"/"+branch, err)
	}
	return res, false, nil
}

// fetch updates refs/remotes/origin/<branch> and returns the branch the
// hub's advertisement chose (see chooseBranch), why it is not main (""
// when it is), and its hash (zero when the remote is empty or has no
// such branch yet).
func (g *Repo) fetch(ctx context.Context, opts Options, auth *remoteAuth) (branch, why string, fetched bool, head plumbing.Hash, err error) {
	fctx, w, stop := watchIdle(ctx, opts.Timeout, opts.Bounds)
	defer stop()
	wr, err := dial(opts.Remote, auth, w, nil)
	if err != nil {
		return "", "", false, plumbing.ZeroHash, err
	}
	defer wr.close()
	type result struct {
		branch, why string
		head        plumbing.Hash
		fetched     bool
	}
	var res result
	err = auth.do(fctx, func(a transport.AuthMethod) error {
		r, err := boundedValue(fctx, func() (result, error) {
			var r result
			var err error
			r.branch, r.head, r.fetched, err = wr.fetchBranch(fctx, g, g.r.Storer, a, func(adv advert) string {
				b, why := adv.chooseBranch()
				r.why = why
				return b
			})
			return r, err
		})
		res = r
		return err
	})
	branch, why, fetched, head = res.branch, res.why, res.fetched, res.head
	switch {
	case err == nil:
	case w.Stalled():
		return "", "", false, plumbing.ZeroHash, fmt.Errorf("fetch from %s: %s; local notes are committed", Redact(opts.Remote), w.Reason())
	default:
		return "", "", false, plumbing.ZeroHash, networkError("fetch from", opts.Remote, err)
	}
	if head.IsZero() {
		return branch, why, false, head, nil
	}
	ref := plumbing.NewHashReference(plumbing.NewRemoteReferenceName(RemoteName, branch), head)
	if err := g.r.Storer.SetReference(ref); err != nil {
		return branch, why, fetched, head, fmt.Errorf("record %s: %w", ref.Name(), err)
	}
	return branch, why, fetched, head, nil
}

// push sends main to the hub's branch. retry reports a rejection that
// another fetch and merge can fix (someone pushed first).
func (g *Repo) push(ctx context.Context, opts Options, auth *remoteAuth, branch string, local plumbing.Hash) (pushed, retry bool, err error) {
	pctx, w, stop := watchIdle(ctx, opts.Timeout, opts.Bounds)
	defer stop()
	wr, err := dial(opts.Remote, auth, w, nil)
	if err != nil {
		return false, false, err
	}
	defer wr.close()
	var refused *pushRefusal
	err = auth.do(pctx, func(a transport.AuthMethod) error {
		var err error
		pushed, err = boundedValue(pctx, func() (bool, error) { return wr.pushBranch(pctx, g.r.Storer, a, branch, local) })
		return err
	})
	switch {
	case err == nil:
		if pushed {
			// What git records after a push: the hub's branch is ours now.
			ref := plumbing.NewHashReference(plumbing.NewRemoteReferenceName(RemoteName, branch), local)
			if serr := g.r.Storer.SetReference(ref); serr != nil {
				return true, false, fmt.Errorf("record %s: %w", ref.Name(), serr)
			}
		}
		return pushed, false, nil
	case errors.Is(err, errNonFastForward) || isRejection(err):
		return false, true, nil
	case errors.As(err, &refused):
		// Anything else the hub refused (a hook, fsck, a protected
		// branch) stays refused however often we fetch and merge.
		return false, false, fmt.Errorf("push to %s: the hub refused: %s; local notes are committed", Redact(opts.Remote), refused)
	case w.Stalled():
		return false, false, fmt.Errorf("push to %s: %s; local notes are committed", Redact(opts.Remote), w.Reason())
	default:
		return false, false, networkError("push to", opts.Remote, err)
	}
}

// forgetTracking removes a remote-tracking ref that points at refused
// content: nothing should name objects that were discarded, and the next
// fetch then asks for the hub's branch afresh.
func (g *Repo) forgetTracking(remote, branch string) {
	_ = g.r.Storer.RemoveReference(plumbing.NewRemoteReferenceName(remote, branch))
}

// refusedFrom is a refused commit in one line: who served it, which
// commit, why, and that nothing of it reached this machine's notes.
func refusedFrom(who string, err error) error {
	return fmt.Errorf("%s: %w; nothing of it was written, local notes are committed", who, err)
}

// networkError is a failed fetch or push in one line: a refusal of the
// credentials or a missing repository without the page the server sent
// along (a host's HTML error page), anything else with go-git's text;
// the remote always redacted.
func networkError(what, remote string, err error) error {
	var aerr *AuthError
	switch {
	case errors.As(err, &aerr):
		return fmt.Errorf("%w; local notes are committed", aerr)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("%s %s: %w; local notes are committed", what, Redact(remote), transport.ErrRepositoryNotFound)
	}
	return fmt.Errorf("%s %s: %w; local notes are committed", what, Redact(remote), printable{err})
}

// printable shows an error whose text came from a remote (a hub's or a
// peer's message) on one line of plain text: control characters, NULs
// and newlines a server sent become spaces, so it can neither break the
// one-line report nor rewrite the terminal.
type printable struct{ err error }

func (p printable) Error() string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, p.err.Error())
}

func (p printable) Unwrap() error { return p.err }

// bounded returns when fn does or when ctx ends, whichever is first.
// go-git's file transport waits for its git-upload-pack/receive-pack child
// to exit even after the context is done, so a hanging remote would hold
// the sync (and its lock) hostage; the abandoned call finishes on its own.
func bounded(ctx context.Context, fn func() error) error {
	_, err := boundedValue(ctx, func() (struct{}, error) { return struct{}{}, fn() })
	return err
}

// boundedValue is bounded for a call with a result, which is only ever
// read from the call that finished (an abandoned one keeps its own).
func boundedValue[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	type out struct {
		v   T
		err error
	}
	done := make(chan out, 1)
	go func() {
		v, err := fn()
		done <- out{v, err}
	}()
	select {
	case o := <-done:
		return o.v, o.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// isRejection reports a refusal of a push that another round fixes:
// the hub's branch moved (see pushRefusal.stale). Any other refusal is
// the hub's policy and is reported, not retried.
func isRejection(err error) bool {
	var r *pushRefusal
	if errors.As(err, &r) {
		return r.stale()
	}
	return (&pushRefusal{status: err.Error()}).stale() // a transport's own error text
}

// ChangedPaths lists the paths whose content differs between two commits
// (either may be zero, the empty tree).
func (g *Repo) ChangedPaths(from, to Hash) ([]string, error) {
	_, chs, err := g.diffCommits(plumbing.Hash(from), plumbing.Hash(to))
	if err != nil {
		return nil, err
	}
	var out []string
	for p := range chs {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// HasCommit reports whether h names a commit in this repository (read
// through our reader: see commitTree).
func (g *Repo) HasCommit(h Hash) bool {
	objs := g.openObjects()
	defer objs.Close()
	_, err := objs.raw(plumbing.Hash(h), plumbing.CommitObject, MaxCommitBytes)
	return err == nil
}

// Reachable asks remote for its references (nothing is fetched).
// Credentials are found as a sync finds them; errors show the remote
// redacted, in one line. timeout is how long the remote may stay silent.
func (g *Repo) Reachable(ctx context.Context, remote string, timeout time.Duration) (err error) {
	defer func() { err = redactErr(err, remote) }()
	auth, err := newRemoteAuth(remote, g.dir)
	if err != nil {
		return err
	}
	rctx, w, stop := watchIdle(ctx, timeout, Bounds{})
	defer stop()
	wr, err := dial(remote, auth, w, nil)
	if err != nil {
		return err
	}
	defer wr.close()
	err = auth.do(rctx, func(a transport.AuthMethod) error {
		return bounded(rctx, func() error {
			_, err := wr.listRefs(rctx, a)
			return err
		})
	})
	var aerr *AuthError
	switch {
	case err == nil, errors.Is(err, transport.ErrEmptyRemoteRepository):
		return nil
	case w.Stalled():
		return errors.New(w.Reason())
	case errors.As(err, &aerr):
		return aerr
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return transport.ErrRepositoryNotFound
	}
	return err
}
