package gitsync

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Options tune one sync. Zero values take the defaults.
type Options struct {
	Remote     string        // URL or path of the remote; "" syncs nothing, commits only
	Peers      []string      // URLs of peers to fetch from and merge (the mesh); never pushed to
	Timeout    time.Duration // per fetch or push (default 60 s)
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
	Committed      bool         `json:"committed"`
	Fetched        bool         `json:"fetched"`
	Merged         bool         `json:"merged"`
	FastForward    bool         `json:"fast_forward"`
	ConflictCopies []string     `json:"conflict_copies"`
	Pushed         bool         `json:"pushed"`
	Old            string       `json:"old_head"`
	Head           string       `json:"head"`
	Remote         string       `json:"remote"`
	Rounds         int          `json:"rounds"`
	Peers          []PeerResult `json:"peers,omitempty"`
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
	if err := g.configure(opts.Remote, opts.Remote != ""); err != nil {
		return rep, err
	}
	before, err := g.Head()
	if err != nil {
		return rep, err
	}
	rep.Old = before.String()
	opts.Progress("committing local notes")
	head, committed, err := g.CommitAll()
	if err != nil {
		return rep, fmt.Errorf("commit local notes: %w", err)
	}
	rep.Committed, rep.Head = committed, head.String()
	if len(opts.Peers) > 0 {
		peers, conflicts, err := g.syncPeers(ctx, opts.Peers, opts)
		rep.Peers = peers
		rep.ConflictCopies = append(rep.ConflictCopies, conflicts...)
		for _, p := range peers {
			rep.Fetched = rep.Fetched || p.Fetched
			rep.Merged = rep.Merged || p.Merged
		}
		if h, herr := g.Head(); herr == nil {
			rep.Head = h.String()
		}
		if err != nil {
			return rep, err
		}
	}
	if opts.Remote == "" {
		return rep, nil
	}
	auth, err := newRemoteAuth(opts.Remote, g.dir)
	if err != nil {
		return rep, err
	}
	for round := 1; round <= opts.MaxRetries; round++ {
		rep.Rounds = round
		opts.Progress("fetching")
		fetched, theirs, err := g.fetch(ctx, opts, auth)
		if err != nil {
			return rep, err
		}
		rep.Fetched = rep.Fetched || fetched
		if g.beforeMerge != nil {
			g.beforeMerge()
		}
		opts.Progress("merging")
		res, err := g.Merge(theirs)
		if errors.Is(err, ErrDirtyPath) && round < opts.MaxRetries {
			// A note was edited while we merged: nothing was touched.
			// Commit the edit and merge again.
			if _, c, cerr := g.CommitAll(); cerr != nil {
				return rep, fmt.Errorf("commit local notes: %w", cerr)
			} else if c {
				rep.Committed = true
			}
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("merge %s: %w", RemoteName+"/"+Branch, err)
		}
		rep.Merged = rep.Merged || res.Merged
		rep.FastForward = rep.FastForward || res.FastFwd
		rep.ConflictCopies = append(rep.ConflictCopies, res.Conflicts...)
		rep.Head = res.New.String()
		if res.New.IsZero() || res.New == theirs {
			return rep, nil // nothing of ours the remote lacks
		}
		opts.Progress("pushing")
		pushed, retry, err := g.push(ctx, opts, auth)
		if err != nil {
			return rep, err
		}
		if pushed {
			rep.Pushed = true
			return rep, nil
		}
		if !retry {
			return rep, nil
		}
	}
	return rep, fmt.Errorf("push to %s: rejected %d times (others keep pushing); local notes are committed, run sync again", Redact(opts.Remote), opts.MaxRetries)
}

// fetch updates refs/remotes/origin/main and returns its hash (zero when
// the remote is empty or has no main yet).
func (g *Repo) fetch(ctx context.Context, opts Options, auth *remoteAuth) (bool, plumbing.Hash, error) {
	fctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	remoteRef := plumbing.NewRemoteReferenceName(RemoteName, Branch)
	err := auth.do(fctx, func(a transport.AuthMethod) error {
		return bounded(fctx, func() error {
			return g.r.FetchContext(fctx, &git.FetchOptions{
				RemoteName: RemoteName,
				RemoteURL:  auth.dialURL(),
				RefSpecs:   []config.RefSpec{config.RefSpec("+" + branchRef.String() + ":" + remoteRef.String())},
				Auth:       a,
				Tags:       git.NoTags,
			})
		})
	})
	fetched := err == nil
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.Is(err, transport.ErrEmptyRemoteRepository), errors.Is(err, git.NoMatchingRefSpecError{}),
		strings.Contains(err.Error(), "couldn't find remote ref"):
		return false, plumbing.ZeroHash, nil
	case errors.Is(fctx.Err(), context.DeadlineExceeded):
		return false, plumbing.ZeroHash, fmt.Errorf("fetch from %s: no answer within %s; local notes are committed", Redact(opts.Remote), opts.Timeout)
	default:
		return false, plumbing.ZeroHash, networkError("fetch from", opts.Remote, err)
	}
	ref, err := g.r.Reference(remoteRef, true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return fetched, plumbing.ZeroHash, nil
	}
	if err != nil {
		return fetched, plumbing.ZeroHash, fmt.Errorf("read %s: %w", remoteRef, err)
	}
	return fetched, ref.Hash(), nil
}

// push sends main. retry reports a rejection that another fetch and merge
// can fix (someone pushed first).
func (g *Repo) push(ctx context.Context, opts Options, auth *remoteAuth) (pushed, retry bool, err error) {
	pctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	err = auth.do(pctx, func(a transport.AuthMethod) error {
		return bounded(pctx, func() error {
			return g.r.PushContext(pctx, &git.PushOptions{
				RemoteName: RemoteName,
				RemoteURL:  auth.dialURL(),
				RefSpecs:   []config.RefSpec{config.RefSpec(branchRef.String() + ":" + branchRef.String())},
				Auth:       a,
			})
		})
	})
	switch {
	case err == nil:
		return true, false, nil
	case errors.Is(err, git.NoErrAlreadyUpToDate):
		return false, false, nil
	case errors.Is(err, git.ErrForceNeeded) || isRejection(err):
		return false, true, nil
	case errors.Is(pctx.Err(), context.DeadlineExceeded):
		return false, false, fmt.Errorf("push to %s: no answer within %s; local notes are committed", Redact(opts.Remote), opts.Timeout)
	default:
		return false, false, networkError("push to", opts.Remote, err)
	}
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
	return fmt.Errorf("%s %s: %w; local notes are committed", what, Redact(remote), err)
}

// bounded returns when fn does or when ctx ends, whichever is first.
// go-git's file transport waits for its git-upload-pack/receive-pack child
// to exit even after the context is done, so a hanging remote would hold
// the sync (and its lock) hostage; the abandoned call finishes on its own.
func bounded(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func isRejection(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"non-fast-forward", "fetch first", "failed to update ref", "rejected", "not updated", "cannot lock ref"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// ChangedPaths lists the paths whose content differs between two commits
// (either may be zero, the empty tree).
func (g *Repo) ChangedPaths(from, to plumbing.Hash) ([]string, error) {
	ft, err := g.commitTree(from)
	if err != nil {
		return nil, err
	}
	tt, err := g.commitTree(to)
	if err != nil {
		return nil, err
	}
	ff, err := g.flatten(ft)
	if err != nil {
		return nil, err
	}
	tf, err := g.flatten(tt)
	if err != nil {
		return nil, err
	}
	var out []string
	for p := range diffTrees(ff, tf) {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// HasCommit reports whether h names a commit in this repository.
func (g *Repo) HasCommit(h plumbing.Hash) bool {
	_, err := g.r.CommitObject(h)
	return err == nil
}

// Reachable asks remote for its references (nothing is fetched).
// Credentials are found as a sync finds them; errors show the remote
// redacted, in one line.
func (g *Repo) Reachable(ctx context.Context, remote string, timeout time.Duration) (err error) {
	defer func() { err = redactErr(err, remote) }()
	auth, err := newRemoteAuth(remote, g.dir)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := withoutSecret(remote)
	if u := auth.dialURL(); u != "" {
		url = u
	}
	rem := git.NewRemote(g.r.Storer, &config.RemoteConfig{Name: "probe", URLs: []string{url}})
	err = auth.do(rctx, func(a transport.AuthMethod) error {
		return bounded(rctx, func() error {
			_, err := rem.ListContext(rctx, &git.ListOptions{Auth: a})
			return err
		})
	})
	var aerr *AuthError
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return nil
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("no answer within %s", timeout)
	case errors.As(err, &aerr):
		return aerr
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return transport.ErrRepositoryNotFound
	}
	return err
}
