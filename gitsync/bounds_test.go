package gitsync

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/httphub"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// hostileHub is a real hub (git http-backend) behind a proxy that, while
// answer is set, answers upload-pack with whatever answer writes: the
// advertisement is the real hub's, so the client wants a commit it
// lacks, and what comes back is crafted. Clearing answer repairs it.
type hostileHub struct {
	url    string // with credentials
	answer atomic.Pointer[func(ctx context.Context, w io.Writer, flush func())]
}

func startHostileHub(t *testing.T) (*hostileHub, *machine) {
	t.Helper()
	hub, hubURL := startHub(t, "memory", "s3cret")
	direct := httphub.WithCredentials(hubURL, "memory", "s3cret")
	a := newMachine(t, "a", direct)
	a.write(mkNote(a, "from the hub", "an honest note"))
	a.sync()

	target, _ := url.Parse(hub.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	h := &hostileHub{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ans := h.answer.Load()
		if ans == nil || !strings.HasSuffix(r.URL.Path, "/git-upload-pack") || r.Method != http.MethodPost {
			proxy.ServeHTTP(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
		rc := http.NewResponseController(w)
		io.WriteString(w, "0008NAK\n")
		(*ans)(r.Context(), w, func() { rc.Flush() })
	}))
	t.Cleanup(srv.Close)
	h.url = httphub.WithCredentials(srv.URL+strings.TrimPrefix(hubURL, hub.URL), "memory", "s3cret")
	return h, a
}

func (h *hostileHub) set(fn func(ctx context.Context, w io.Writer, flush func())) {
	h.answer.Store(&fn)
}

// band writes data as sideband-64k packets on channel ch.
func band(w io.Writer, ch byte, data []byte) error {
	for len(data) > 0 {
		n := min(len(data), 65515)
		if _, err := fmt.Fprintf(w, "%04x%c", n+5, ch); err != nil {
			return err
		}
		if _, err := w.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// sendPack is an answer that sends pack as band-1 data, then a flush.
func sendPack(pack []byte) func(ctx context.Context, w io.Writer, flush func()) {
	return func(ctx context.Context, w io.Writer, flush func()) {
		if band(w, 1, pack) == nil {
			io.WriteString(w, "0000")
		}
		flush()
	}
}

// objectHeader is a pack object's type and size.
func objectHeader(typ byte, sz int64) []byte {
	b := []byte{typ<<4 | byte(sz&15)}
	sz >>= 4
	for sz > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(sz&0x7f))
		sz >>= 7
	}
	return b
}

// zeros is a zlib stream of n zero bytes (about n/1000 bytes).
func zeros(t testing.TB, n int64) []byte {
	var buf bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&buf, zlib.BestSpeed)
	block := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, int64(len(block)))
		zw.Write(block[:k])
		n -= k
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ofsDistance encodes an ofs-delta's distance to its base as git does.
func ofsDistance(d int64) []byte {
	b := []byte{byte(d & 0x7f)}
	for d >>= 7; d > 0; d >>= 7 {
		d--
		b = append([]byte{0x80 | byte(d&0x7f)}, b...)
	}
	return b
}

func deflate(data []byte) []byte {
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	return buf.Bytes()
}

// memCheck fails the test if more than limit bytes were allocated
// between its start and the returned function's call (the heap a
// gigabyte blob would need shows there even when the GC returned it).
func memCheck(t *testing.T, limit uint64) func() {
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	return func() {
		t.Helper()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > limit {
			t.Errorf("allocated %d MB, want under %d MB", d>>20, limit>>20)
		}
		t.Logf("allocated %.1f MB, heap peak (Sys) %d MB", float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), after.Sys>>20)
	}
}

// TestHostileHubIsCutAtEachBound: a hub that sends a pack claiming
// billions of objects, a blob bomb (one blob that inflates to over a
// GiB, honest or lying about its size, or a small delta that makes one),
// nothing but progress messages, or a pack that never ends, is refused
// within its bound, in one line naming the hub and the bound, without
// the memory the hub asks for; the local note is committed, the lock
// released, and once the hub is repaired the next sync works.
func TestHostileHubIsCutAtEachBound(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 1 GiB blob bomb")
	}
	const bomb = 1100 << 20
	bombStream := zeros(t, bomb)
	// A delta on a 64 KiB blob of zeros that makes a 1.1 GiB blob by
	// copying the base again and again: 53 KB before deflate, 200 bytes
	// after.
	base := make([]byte, 1<<16)
	var delta []byte
	delta = binary.AppendUvarint(delta, uint64(len(base)))
	delta = binary.AppendUvarint(delta, bomb)
	for i := 0; i < bomb>>16; i++ {
		delta = append(delta, 0x80|0x10|0x20, 0x00, 0x00) // copy 0x10000 bytes from offset 0
	}
	baseObj := append(objectHeader(3, int64(len(base))), deflate(base)...)
	deltaObj := append(append(objectHeader(6, int64(len(delta))), ofsDistance(int64(len(baseObj)))...), deflate(delta)...)

	cases := []struct {
		name   string
		answer func(ctx context.Context, w io.Writer, flush func())
		bounds Bounds
		want   string
		within time.Duration
	}{
		{"claims 4e9 objects", sendPack(append(packHeader(4e9), make([]byte, 64)...)), Bounds{},
			"the pack claims 4000000000 objects, over the 2000000 one fetch may bring", 3 * time.Second},
		{"blob bomb", sendPack(append(append(packHeader(1), objectHeader(3, bomb)...), bombStream...)), Bounds{},
			"object 1 of the pack is a blob of 1.1 GiB, over the 1 MiB limit for a note file", 3 * time.Second},
		{"blob bomb with a lying header", sendPack(append(append(packHeader(1), objectHeader(3, 100)...), bombStream...)), Bounds{},
			"object 1 of the pack inflates past the 100 bytes its header gives", 3 * time.Second},
		{"delta bomb", sendPack(bytes.Join([][]byte{packHeader(2), baseObj, deltaObj}, nil)), Bounds{},
			"object 2 of the pack is a delta that makes a blob of 1.1 GiB, over the 1 MiB limit for a note file", 3 * time.Second},
		{"only progress", func(ctx context.Context, w io.Writer, flush func()) {
			for ctx.Err() == nil {
				if band(w, 2, []byte("Counting objects: 42%\r")) != nil {
					return
				}
				flush()
				time.Sleep(20 * time.Millisecond)
			}
		}, Bounds{ProgressOnly: time.Second},
			"only progress messages and no data for 1s", 3 * time.Second},
		{"a pack that never ends", func(ctx context.Context, w io.Writer, flush func()) {
			// One blob whose zlib stream is empty stored blocks forever:
			// it never inflates to anything and never ends.
			start := append(packHeader(1), objectHeader(3, 10)...)
			if band(w, 1, append(start, 0x78, 0x01)) != nil {
				return
			}
			empty := bytes.Repeat([]byte{0x00, 0x00, 0x00, 0xff, 0xff}, 8192)
			for ctx.Err() == nil {
				if band(w, 1, empty) != nil {
					return
				}
				flush()
			}
		}, Bounds{PackBytes: 8 << 20},
			"the pack is over 8 MiB (the bound for one fetch) and still coming", 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, a := startHostileHub(t)
			h.set(c.answer)
			b := newMachine(t, "b", h.url)
			b.write(mkNote(b, "stays", "local"))
			check := memCheck(t, 256<<20)
			// Before the bounds, some of these never end: the deadline
			// makes that a failure rather than a hung test.
			tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			start := time.Now()
			_, err := b.repo.Sync(tctx, Options{Remote: h.url, Timeout: 5 * time.Second, Bounds: c.bounds})
			took := time.Since(start)
			check()
			if err == nil {
				t.Fatal("sync against a hostile hub succeeded")
			}
			want := "fetch from " + Redact(h.url) + ": " + c.want + "; local notes are committed"
			if err.Error() != want {
				t.Errorf("error\n%q\nwant\n%q", err, want)
			}
			if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error is not one redacted line: %q", err)
			}
			if took > c.within {
				t.Errorf("gave up after %v, want within %v", took.Round(time.Millisecond), c.within)
			}
			if head, _ := b.repo.Head(); head.IsZero() {
				t.Error("local note not committed")
			}
			// Repaired: the same hub answers honestly, and the next sync
			// (the lock released) brings its note and pushes ours.
			h.answer.Store(nil)
			rep, err := b.repo.Sync(ctx, Options{Remote: h.url, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatalf("sync after the hub was repaired: %v", err)
			}
			if !rep.Fetched || !rep.Pushed {
				t.Errorf("sync after the repair: %+v", rep)
			}
			a.sync()
			sameTrees(t, a, b)
			b.fsck()
		})
	}
}

// TestHubRefusalIsShownNotRetried: a hub that refuses a push for its own
// reasons (a pre-receive hook, fsck) is reported at once with what it
// said, not retried as if someone had pushed first; the note is
// committed, and once the hub accepts, the next sync pushes.
func TestHubRefusalIsShownNotRetried(t *testing.T) {
	hook := "#!/bin/sh\necho 'notes need a ticket number' >&2\nexit 1\n"
	setHook := func(t *testing.T, gitDir string) func() {
		p := filepath.Join(gitDir, "hooks", "pre-receive")
		if err := os.WriteFile(p, []byte(hook), 0o755); err != nil {
			t.Fatal(err)
		}
		return func() { os.Remove(p) }
	}
	check := func(t *testing.T, remote, wantReason string, repair func(), m *machine) {
		t.Helper()
		rep, err := m.repo.Sync(ctx, Options{Remote: remote, Timeout: 10 * time.Second})
		want := "push to " + Redact(remote) + ": the hub refused: " + wantReason + "; local notes are committed"
		if err == nil || err.Error() != want {
			t.Fatalf("error\n%v\nwant\n%s", err, want)
		}
		if rep.Rounds != 1 {
			t.Errorf("%d rounds, want 1: a refusal is not retried", rep.Rounds)
		}
		if head, _ := m.repo.Head(); head.IsZero() {
			t.Error("local note not committed")
		}
		repair()
		m.advance()
		if rep, err = m.repo.Sync(ctx, Options{Remote: remote, Timeout: 10 * time.Second}); err != nil || !rep.Pushed {
			t.Fatalf("sync once the hub accepts: %+v, %v", rep, err)
		}
	}
	t.Run("pre-receive hook, local hub", func(t *testing.T) {
		hub := testutil.BareHub(t)
		m := newMachine(t, "a", hub)
		m.write(mkNote(m, "a note", "body"))
		check(t, hub, "notes need a ticket number (pre-receive hook declined)", setHook(t, hub), m)
	})
	t.Run("pre-receive hook, http hub", func(t *testing.T) {
		h, url := startHub(t, "memory", "s3cret")
		remote := httphub.WithCredentials(url, "memory", "s3cret")
		m := newMachine(t, "a", remote)
		m.write(mkNote(m, "a note", "body"))
		check(t, remote, "notes need a ticket number (pre-receive hook declined)", setHook(t, filepath.Join(h.Root, "hub.git")), m)
	})
	t.Run("fsck", func(t *testing.T) {
		hub := testutil.BareHub(t)
		testutil.Git(t, hub, "config", "receive.fsckObjects", "true")
		m := newMachine(t, "a", hub)
		// A file git's fsck refuses: a .gitmodules whose url is an option.
		os.WriteFile(filepath.Join(m.repo.Dir(), ".gitmodules"), []byte("[submodule \"x\"]\n\tpath = x\n\turl = --upload-pack=evil\n"), 0o644)
		check(t, hub, "error: object 115b6f9fa25706059bcec2cf0710f9a44b3abb68: gitmodulesUrl: disallowed submodule url: --upload-pack=evil; fatal: fsck error in pack objects (unpack-objects abnormal exit)", func() { testutil.Git(t, hub, "config", "receive.fsckObjects", "false") }, m)
	})
}
