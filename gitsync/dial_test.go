package gitsync

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
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

// TestPeerThatRefusesThisMachine: a peer answering 403 to a fetch that
// sent no credentials is an anamnesis serve refusing this machine (found
// on a real tailnet: a tagged node syncing with peers: URLs). The report
// says so, not "authentication failed: check the token in config.json",
// which would send the user after credentials that do not exist; with
// and without a dialer alike.
func TestPeerThatRefusesThisMachine(t *testing.T) {
	credHome(t) // no git credential helper answers
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden) // what serve answers a caller WhoIs does not allow
	}))
	t.Cleanup(peer.Close)
	addr := must(url.Parse(peer.URL)).Host
	var d net.Dialer
	for _, dial := range []DialFunc{nil, func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}} {
		m := newMachine(t, "m", "")
		m.write(mkNote(m, "mine", "local"))
		rep, err := m.repo.Sync(ctx, Options{Peers: []string{peer.URL + "/memory"}, Dial: dial, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("sync (dialer %v): %v", dial != nil, err)
		}
		if len(rep.Peers) != 1 {
			t.Fatalf("sync (dialer %v): %+v", dial != nil, rep.Peers)
		}
		msg := rep.Peers[0].Error
		if !strings.Contains(msg, "refuses this machine (403") || strings.Contains(msg, "token") || strings.Contains(msg, "authentication") {
			t.Errorf("sync (dialer %v): peer error %q, want it to say the peer refuses this machine (403)", dial != nil, msg)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
