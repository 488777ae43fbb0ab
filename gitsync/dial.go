package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// DialFunc opens a connection like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// maxHaves bounds the commits of our history announced to a peer, as
// go-git does for its own fetches.
const maxHaves = 100

// fetchMainVia fetches the peer's main over http(s) with connections
// opened by dial, into st, and returns its hash (zero: the peer has no
// main yet) and whether objects came. go-git's Remote only uses the HTTP
// client installed process-wide for a scheme; this does its fetch with
// a client of this call's own (a tailscaled in userspace mode is how
// this machine reaches its peers, and only for these fetches).
func fetchMainVia(ctx context.Context, st storer.Storer, u string, auth transport.AuthMethod, dial DialFunc, ours plumbing.Hash) (plumbing.Hash, bool, error) {
	ep, err := transport.NewEndpoint(u)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	if ep.Protocol != "http" && ep.Protocol != "https" {
		return plumbing.ZeroHash, false, fmt.Errorf("peer %s: only http(s) peers can be reached through a dialer", Redact(u))
	}
	// No proxy from the environment: the dialer is the way to the peer.
	tr := &http.Transport{DialContext: dial}
	defer tr.CloseIdleConnections()
	sess, err := githttp.NewClient(&http.Client{Transport: tr}).NewUploadPackSession(ep, auth)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	refs, err := ar.AllReferences()
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	main, ok := refs[branchRef]
	if !ok || main.Hash().IsZero() {
		return plumbing.ZeroHash, false, nil
	}
	theirs := main.Hash()
	if st.HasEncodedObject(theirs) == nil {
		return theirs, false, nil // nothing new
	}
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	if ar.Capabilities.Supports(capability.NoProgress) {
		if err := req.Capabilities.Set(capability.NoProgress); err != nil {
			return plumbing.ZeroHash, false, err
		}
	}
	req.Wants = []plumbing.Hash{theirs}
	req.Haves = haves(st, ours)
	res, err := sess.UploadPack(ctx, req)
	if errors.Is(err, transport.ErrEmptyUploadPackRequest) {
		return theirs, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	defer res.Close()
	var pack io.Reader = res
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		pack = sideband.NewDemuxer(sideband.Sideband64k, res)
	case req.Capabilities.Supports(capability.Sideband):
		pack = sideband.NewDemuxer(sideband.Sideband, res)
	}
	if err := packfile.UpdateObjectStorage(st, pack); err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("store the pack from %s: %w", Redact(u), err)
	}
	return theirs, true, nil
}

// haves lists our head and its recent ancestors, so the peer sends only
// what we lack.
func haves(st storer.EncodedObjectStorer, head plumbing.Hash) []plumbing.Hash {
	if head.IsZero() {
		return nil
	}
	c, err := object.GetCommit(st, head)
	if err != nil {
		return nil
	}
	var out []plumbing.Hash
	_ = object.NewCommitPreorderIter(c, nil, nil).ForEach(func(c *object.Commit) error {
		out = append(out, c.Hash)
		if len(out) == maxHaves {
			return storer.ErrStop
		}
		return nil
	})
	return out
}
