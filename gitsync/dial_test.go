package gitsync

import (
	"context"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/httphub"
)

// TestPeerFetchThroughADialer: a peer whose address this machine cannot
// reach itself (as with tailscaled in userspace mode, where only
// tailscaled can open connections to the tailnet) is fetched through
// Options.Dial, first in full, then only what is new; the dialer sees
// the peer's own address.
func TestPeerFetchThroughADialer(t *testing.T) {
	hub, err := httphub.Start(t.TempDir(), "u", "p")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hub.Close)
	served, err := hub.NewRepo("memory")
	if err != nil {
		t.Fatal(err)
	}
	a := newMachine(t, "a", httphub.WithCredentials(served, "u", "p")) // a's memory, as its serve shows it
	b := newMachine(t, "b", "")
	first := a.write(mkNote(a, "first", "from a"))
	a.sync()

	hubAddr := must(url.Parse(served)).Host
	const peerAddr = "peer-a.tailnet.example:7719" // resolvable by nobody but the dialer
	var dials atomic.Int32
	var dialed atomic.Value
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		dialed.Store(addr)
		var d net.Dialer
		return d.DialContext(ctx, network, hubAddr)
	}
	peer := "http://u:p@" + peerAddr + "/memory"
	syncB := func() Report {
		t.Helper()
		b.advance()
		rep, err := b.repo.Sync(ctx, Options{Peers: []string{peer}, Dial: dial, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatalf("b sync: %v", err)
		}
		if len(rep.Peers) != 1 || rep.Peers[0].Error != "" {
			t.Fatalf("b's fetch from a: %+v", rep.Peers)
		}
		return rep
	}
	rep := syncB()
	if !rep.Fetched || !rep.Merged || b.read(first).Body != "from a" {
		t.Fatalf("first fetch through the dialer: %+v", rep)
	}
	if dials.Load() == 0 || dialed.Load() != peerAddr {
		t.Fatalf("the dialer was not used for the peer (%d dials, last %v)", dials.Load(), dialed.Load())
	}
	a.advance()
	second := a.write(mkNote(a, "second", "later from a"))
	a.sync()
	b.write(mkNote(b, "mine", "b's own, unknown to a"))
	rep = syncB()
	if !rep.Fetched || b.read(second).Body != "later from a" {
		t.Fatalf("incremental fetch through the dialer: %+v", rep)
	}
	rep = syncB()
	if rep.Fetched {
		t.Errorf("nothing new, yet fetched: %+v", rep)
	}
	b.fsck()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
