package gitsync

import (
	"crypto/rand"
	"encoding/base32"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/httphub"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// trickle is a TCP proxy in front of a real hub that passes at most chunk
// bytes every interval in each direction: a slow link that is never
// quiet for long. Its receiving sockets have small buffers, so a sender
// sees the link's pace, as on a real slow link, and not loopback's
// megabytes of buffering. With stallAfter > 0 it stops passing anything
// towards the client after that many bytes: a hub that hangs mid-transfer.
type trickle struct {
	ln         net.Listener
	target     string
	chunk      int
	every      time.Duration
	stallAfter int64

	down   atomic.Int64
	done   chan struct{}
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func startTrickle(t *testing.T, target string, chunk int, every time.Duration, stallAfter int64) *trickle {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &trickle{ln: ln, target: target, chunk: chunk, every: every, stallAfter: stallAfter, done: make(chan struct{})}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *trickle) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		for _, x := range []net.Conn{c, up} {
			x.(*net.TCPConn).SetReadBuffer(p.chunk)
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go p.pipe(up, c, false)
		go p.pipe(c, up, true)
	}
}

func (p *trickle) pipe(dst, src net.Conn, down bool) {
	buf := make([]byte, p.chunk)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if down && p.stallAfter > 0 && p.down.Add(int64(n)) > p.stallAfter {
				<-p.done // hang: nothing more goes to the client
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			select {
			case <-time.After(p.every):
			case <-p.done:
				return
			}
		}
		if err != nil {
			if tc, ok := dst.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
	}
}

func (p *trickle) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	close(p.done)
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

// via is url with its host replaced by the proxy's.
func (p *trickle) via(url, host string) string {
	return strings.Replace(url, host, p.ln.Addr().String(), 1)
}

// writeRandomNotes writes n notes with bodies that do not compress, so the
// pack is about n*size bytes.
func writeRandomNotes(m *machine, n, size int) {
	m.t.Helper()
	buf := make([]byte, size*5/8)
	for i := 0; i < n; i++ {
		rand.Read(buf)
		body := base32.StdEncoding.EncodeToString(buf)
		var lines []string
		for len(body) > 72 {
			lines, body = append(lines, body[:72]), body[72:]
		}
		m.write(mkNote(m, "random note", strings.Join(append(lines, body), "\n")))
	}
}

// TestSlowTransfersOutlastTheTimeout: --timeout measures silence, not
// length. Through a link that moves 16 KB every 100 ms, a first fetch and
// a first push of about 600 KB take well over the 1.5 s timeout and
// succeed, because data never stops moving for that long. (The timeout
// leaves room for the hub's own silence while it stores a pushed pack.)
func TestSlowTransfersOutlastTheTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("slow link: a few seconds")
	}
	// Most of its time is a slow link's waiting: it runs beside the
	// package's other waiting tests.
	t.Parallel()
	hub, url := startHub(t, "memory", "s3cret")
	host := strings.TrimPrefix(hub.URL, "http://")
	direct := httphub.WithCredentials(url, "memory", "s3cret")
	slow := startTrickle(t, host, 16<<10, 100*time.Millisecond, 0).via(direct, host)
	const timeout = 1500 * time.Millisecond

	a := newMachine(t, "a", direct)
	writeRandomNotes(a, 150, 4<<10)
	a.sync() // fast, straight to the hub

	b := newMachine(t, "b", slow)
	start := time.Now()
	rep, err := b.repo.Sync(ctx, Options{Remote: slow, Timeout: timeout})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("first fetch over a slow link (after %v): %v", took.Round(time.Millisecond), err)
	}
	if took < timeout*3/2 {
		t.Fatalf("the fetch took %v: too fast to show anything about a %v timeout", took, timeout)
	}
	if !rep.Fetched || len(b.tree()) != len(a.tree()) {
		t.Fatalf("fetch incomplete: %+v, %d of %d files", rep, len(b.tree()), len(a.tree()))
	}
	t.Logf("fetch over the slow link took %v", took.Round(time.Millisecond))

	// And the other way: a push of a few hundred KB, upstream through the
	// same slow link.
	writeRandomNotes(b, 150, 4<<10)
	b.advance()
	start = time.Now()
	rep, err = b.repo.Sync(ctx, Options{Remote: slow, Timeout: timeout})
	took = time.Since(start)
	if err != nil {
		t.Fatalf("push over a slow link (after %v): %v", took.Round(time.Millisecond), err)
	}
	if took < timeout*3/2 {
		t.Fatalf("the push took %v: too fast to show anything about a %v timeout", took, timeout)
	}
	if !rep.Pushed {
		t.Fatalf("not pushed: %+v", rep)
	}
	t.Logf("push over the slow link took %v", took.Round(time.Millisecond))
	a.sync()
	sameTrees(t, a, b)
}

// TestStalledHubGivesUpInTime: a hub that accepts and never answers, and
// one that stops in the middle of a transfer, are given up on after the
// timeout of silence, with one line that says so; the local note is
// committed.
func TestStalledHubGivesUpInTime(t *testing.T) {
	const timeout = time.Second
	check := func(t *testing.T, remote string, m *machine) {
		t.Helper()
		start := time.Now()
		_, err := m.repo.Sync(ctx, Options{Remote: remote, Timeout: timeout})
		took := time.Since(start)
		if err == nil {
			t.Fatal("sync against a stalled hub succeeded")
		}
		want := "fetch from " + Redact(remote) + ": no data for 1s; local notes are committed"
		if err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
		if took < timeout || took > timeout+1500*time.Millisecond {
			t.Errorf("gave up after %v, want about %v", took.Round(time.Millisecond), timeout)
		}
		if head, _ := m.repo.Head(); head.IsZero() {
			t.Error("local note not committed")
		}
	}
	t.Run("never answers", func(t *testing.T) {
		url := "http://memory:s3cret@" + httphub.Stalled(t) + "/hub.git"
		m := newMachine(t, "a", url)
		m.write(mkNote(m, "stays", "local"))
		check(t, url, m)
	})
	t.Run("stops mid-transfer", func(t *testing.T) {
		if testing.Short() {
			t.Skip("builds a hub with a few hundred KB")
		}
		hub, url := startHub(t, "memory", "s3cret")
		host := strings.TrimPrefix(hub.URL, "http://")
		direct := httphub.WithCredentials(url, "memory", "s3cret")
		a := newMachine(t, "a", direct)
		writeRandomNotes(a, 60, 4<<10)
		a.sync()
		// Passes the advertisement and the first 64 KB of the pack, then hangs.
		stuck := startTrickle(t, host, 16<<10, 10*time.Millisecond, 64<<10).via(direct, host)
		b := newMachine(t, "b", stuck)
		b.write(mkNote(b, "stays", "local"))
		check(t, stuck, b)
	})
}

// TestStalledPeerGivesUpInTime: the mesh's fetch from a peer is watched the
// same way; the other peers still merge.
func TestStalledPeerGivesUpInTime(t *testing.T) {
	hub := testutil.BareHub(t)
	a := newMachine(t, "a", hub)
	rel := a.write(mkNote(a, "from the good peer", "x"))
	a.sync()
	b := newMachine(t, "b", "")
	stalled := "http://" + httphub.Stalled(t) + "/memory"
	start := time.Now()
	rep, err := b.repo.Sync(ctx, Options{Peers: []string{stalled, hub}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("took %v", took)
	}
	if rep.Peers[0].Error != "no data for 1s" || rep.Peers[1].Error != "" || !rep.Peers[1].Merged {
		t.Errorf("peers: %+v", rep.Peers)
	}
	if n := b.read(rel); n.Title != "from the good peer" {
		t.Errorf("note from the good peer: %+v", n)
	}
}
