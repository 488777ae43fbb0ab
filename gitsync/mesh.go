package gitsync

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// PeerResult is what fetching from one peer did.
type PeerResult struct {
	URL     string `json:"url"`
	Fetched bool   `json:"fetched"`
	Merged  bool   `json:"merged"`
	Error   string `json:"error,omitempty"`
}

// refUnsafe is compiled on first use, not in every hook process.
var refUnsafe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]+`) })

// peerName turns a peer URL into a remote-tracking ref name.
func peerName(u string) string {
	name := u
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		name = p.Host
	}
	return "peer-" + strings.Trim(refUnsafe().ReplaceAllString(name, "-"), "-.")
}

// syncPeers fetches main from every peer in parallel (each bounded by the
// timeout) into refs/remotes/peer-<host>/main and merges each result in
// turn. Nothing is pushed: in the mesh every machine pulls. A peer that
// fails is reported and skipped; the others still merge. The caller holds
// the lock and has committed local changes.
func (g *Repo) syncPeers(ctx context.Context, peers []string, opts Options) ([]PeerResult, []string, error) {
	packs := g.packFiles()
	results := make([]PeerResult, len(peers))
	heads := make([]plumbing.Hash, len(peers))
	var wg sync.WaitGroup
	for i, u := range peers {
		results[i].URL = Redact(u)
		wg.Add(1)
		go func(i int, u string) {
			defer wg.Done()
			h, fetched, err := g.fetchPeer(ctx, u, opts)
			results[i].Fetched = fetched
			heads[i] = h
			if err != nil {
				results[i].Error = redactErr(err, u).Error()
			}
		}(i, u)
	}
	wg.Wait()
	// The fetches wrote objects through storages of their own: make this
	// repository's object store see the new packs, then record the
	// remote-tracking refs (here, one writer, no concurrent reader).
	g.reindexPacks()
	for i, u := range peers {
		if !heads[i].IsZero() {
			ref := plumbing.NewHashReference(plumbing.NewRemoteReferenceName(peerName(u), Branch), heads[i])
			if err := g.r.Storer.SetReference(ref); err != nil {
				return results, nil, fmt.Errorf("record %s: %w", ref.Name(), err)
			}
		}
	}
	var conflicts []string
	for i := range peers {
		if results[i].Error != "" || heads[i].IsZero() {
			continue
		}
		var res MergeResult
		var err error
		for attempt := 0; attempt < 3; attempt++ {
			res, err = g.Merge(ctx, Hash(heads[i]))
			if !errors.Is(err, ErrDirtyPath) {
				break
			}
			if _, _, cerr := g.commitAll(ctx); cerr != nil {
				return results, conflicts, cerr
			}
		}
		if errors.Is(err, ErrRefused) {
			// One peer serving bad content must not stop the others: it
			// is reported like a peer that could not be reached.
			results[i].Error = refusedFrom("peer "+Redact(peers[i]), err).Error()
			g.discardRefused(packs, heads[i])
			g.forgetTracking(peerName(peers[i]), Branch)
			continue
		}
		if err != nil {
			return results, conflicts, fmt.Errorf("merge %s: %w", Redact(peers[i]), err)
		}
		results[i].Merged = res.Merged || res.FastFwd
		conflicts = append(conflicts, res.Conflicts...)
	}
	return results, conflicts, nil
}

// isolatedRefs is a storage for one of several parallel fetches: objects
// go to the repository on disk (each fetch writes its own pack), while
// references live in memory, seeded with this repository's main. go-git
// rewrites ref files in place, and parallel fetches iterating and writing
// the same refs directory would read each other's half-written files.
type isolatedRefs struct {
	*filesystem.Storage
	mu   sync.Mutex
	refs map[plumbing.ReferenceName]*plumbing.Reference
}

func (s *isolatedRefs) SetReference(r *plumbing.Reference) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs[r.Name()] = r
	return nil
}

func (s *isolatedRefs) CheckAndSetReference(n, old *plumbing.Reference) error {
	return s.SetReference(n)
}

func (s *isolatedRefs) Reference(n plumbing.ReferenceName) (*plumbing.Reference, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.refs[n]; ok {
		return r, nil
	}
	return nil, plumbing.ErrReferenceNotFound
}

func (s *isolatedRefs) IterReferences() (storer.ReferenceIter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*plumbing.Reference
	for _, r := range s.refs {
		out = append(out, r)
	}
	return storer.NewReferenceSliceIter(out), nil
}

func (s *isolatedRefs) RemoveReference(n plumbing.ReferenceName) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.refs, n)
	return nil
}

func (s *isolatedRefs) CountLooseRefs() (int, error) { return 0, nil }
func (s *isolatedRefs) PackRefs() error              { return nil }

func (g *Repo) fetchPeer(ctx context.Context, u string, opts Options) (plumbing.Hash, bool, error) {
	st := &isolatedRefs{Storage: filesystem.NewStorage(osfs.New(g.gitDir), cache.NewObjectLRUDefault()),
		refs: map[plumbing.ReferenceName]*plumbing.Reference{}}
	head, err := g.head()
	if err == nil && !head.IsZero() {
		st.refs[branchRef] = plumbing.NewHashReference(branchRef, head) // our history, so only new objects come
	}
	auth, err := newRemoteAuth(u, g.dir)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	fctx, w, stop := watchIdle(ctx, opts.Timeout, opts.Bounds)
	defer stop()
	wr, err := dial(u, auth, w, opts.Dial)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	defer wr.close()
	type result struct {
		head    plumbing.Hash
		fetched bool
	}
	var res result
	refused := false // a 403 to a fetch with no credentials
	err = auth.do(fctx, func(a transport.AuthMethod) error {
		r, err := boundedValue(fctx, func() (result, error) {
			// A peer serves its main only (anamnesis serve).
			_, h, f, err := wr.fetchBranch(fctx, g, st, a, func(advert) string { return Branch })
			return result{h, f}, err
		})
		res = r
		refused = a == nil && errors.Is(err, transport.ErrAuthorizationFailed)
		return err
	})
	switch {
	case err == nil:
		return res.head, res.fetched, nil
	case refused:
		// A peer is another machine's `anamnesis serve`: it needs no
		// credentials and refuses by who the caller is (WhoIs), so
		// pointing at tokens and credential helpers would mislead.
		return plumbing.ZeroHash, false, errors.New("refuses this machine (403: it serves its own user's machines and the tags in its tailnet_allow_tags)")
	case w.Stalled():
		return plumbing.ZeroHash, false, errors.New(w.Reason())
	default:
		return plumbing.ZeroHash, false, err
	}
}
