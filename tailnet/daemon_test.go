package tailnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"tailscale.com/client/tailscale/apitype"
	"tailscale.com/ipn/ipnstate"
	"tailscale.com/tailcfg"
	"tailscale.com/types/key"
	"tailscale.com/types/views"
)

type fakeDaemon struct {
	st    *ipnstate.Status
	err   error
	whois map[string]*apitype.WhoIsResponse
	// routes maps a tailnet "ip:port" to the loopback address standing for
	// it; dials counts the connections made through UserDial.
	routes map[string]string
	dials  *atomic.Int32
}

func (f fakeDaemon) UserDial(ctx context.Context, network, host string, port uint16) (net.Conn, error) {
	if f.dials != nil {
		f.dials.Add(1)
	}
	to, ok := f.routes[net.JoinHostPort(host, fmt.Sprint(port))]
	if !ok {
		return nil, fmt.Errorf("no route to %s", host)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, to)
}

func (f fakeDaemon) Status(context.Context) (*ipnstate.Status, error) { return f.st, f.err }
func (f fakeDaemon) WhoIs(_ context.Context, addr string) (*apitype.WhoIsResponse, error) {
	host, _, _ := net.SplitHostPort(addr)
	if w, ok := f.whois[host]; ok {
		return w, nil
	}
	return nil, errors.New("peer not found")
}

func TestWhoIsAuth(t *testing.T) {
	me := tailcfg.UserID(1)
	d := fakeDaemon{whois: map[string]*apitype.WhoIsResponse{
		"100.64.0.2": {Node: &tailcfg.Node{ComputedName: "laptop"}, UserProfile: &tailcfg.UserProfile{ID: me, LoginName: "me@x"}},
		"100.64.0.3": {Node: &tailcfg.Node{ComputedName: "friend"}, UserProfile: &tailcfg.UserProfile{ID: 2, LoginName: "them@x"}},
		"100.64.0.4": {Node: &tailcfg.Node{ComputedName: "ci", Tags: []string{"tag:ci"}}, UserProfile: &tailcfg.UserProfile{ID: 99}},
		"100.64.0.5": {Node: &tailcfg.Node{ComputedName: "build", Tags: []string{"tag:anamnesis"}}, UserProfile: &tailcfg.UserProfile{ID: 99}},
	}}
	a := WhoIsAuth{D: d, User: me, AllowTags: []string{"tag:anamnesis"}}
	for addr, ok := range map[string]bool{
		"100.64.0.2:5000": true, "100.64.0.3:5000": false, "100.64.0.4:5000": false,
		"100.64.0.5:5000": true, "203.0.113.9:5000": false,
	} {
		who, err := a.Authorize(context.Background(), addr)
		if ok != (err == nil) {
			t.Errorf("%s: who %q err %v", addr, who, err)
		}
		if err != nil && !errors.Is(err, gitsync.ErrForbidden) {
			t.Errorf("%s: error should be gitsync.ErrForbidden: %v", addr, err)
		}
	}
}

func TestStatusMessages(t *testing.T) {
	_, _, err := Status(context.Background(), fakeDaemon{err: &net.OpError{Op: "dial", Err: errors.New("connect: no such file or directory")}})
	if !errors.Is(err, ErrNoTailnet) || !strings.Contains(err.Error(), "not running") {
		t.Errorf("not running: %v", err)
	}
	_, _, err = Status(context.Background(), fakeDaemon{st: &ipnstate.Status{BackendState: "NeedsLogin"}})
	if !errors.Is(err, ErrNoTailnet) || !strings.Contains(err.Error(), "tailscale up") {
		t.Errorf("logged out: %v", err)
	}
	k1, k2 := key.NewNode().Public(), key.NewNode().Public()
	tags := views.SliceOf([]string{"tag:server"})
	st := &ipnstate.Status{BackendState: "Running", TailscaleIPs: []netip.Addr{netip.MustParseAddr("100.64.0.1")},
		Self: &ipnstate.PeerStatus{HostName: "desk", UserID: 1},
		Peer: map[key.NodePublic]*ipnstate.PeerStatus{
			k1: {HostName: "laptop", DNSName: "laptop.tail.ts.net.", UserID: 1, Online: true, TailscaleIPs: []netip.Addr{netip.MustParseAddr("100.64.0.2")}},
			k2: {HostName: "box", UserID: 9, Tags: &tags},
		}}
	self, peers, err := Status(context.Background(), fakeDaemon{st: st})
	if err != nil || self.Name != "desk" || len(self.IPs) != 1 || len(peers) != 2 {
		t.Fatalf("%+v %+v %v", self, peers, err)
	}
	if p := peers[1]; p.Name != "laptop" || p.DNSName != "laptop.tail.ts.net" || !p.SameUser || !p.Online {
		t.Errorf("laptop %+v", p)
	}
	if p := peers[0]; p.Name != "box" || p.SameUser || fmt.Sprint(p.Tags) != "[tag:server]" {
		t.Errorf("box %+v", p)
	}
}

func TestLoopbackAuth(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "10.0.0.1:1": false, "junk": false} {
		if _, err := (gitsync.LoopbackAuth{}).Authorize(context.Background(), addr); ok != (err == nil) {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

func TestUserspaceModeServesOnLoopback(t *testing.T) {
	st := &ipnstate.Status{BackendState: "Running", TUN: false,
		TailscaleIPs: []netip.Addr{netip.MustParseAddr("100.64.0.1"), netip.MustParseAddr("fd7a:115c:a1e0::1")},
		Self:         &ipnstate.PeerStatus{HostName: "box", UserID: 1}}
	d := fakeDaemon{st: st}
	self, _, err := Status(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if !self.Userspace || fmt.Sprint(self.ListenAddrs(7719)) != "[127.0.0.1:7719]" || self.Dial(d) == nil {
		t.Errorf("userspace tailscaled: userspace %v, listen %v, dial through tailscaled %v", self.Userspace, self.ListenAddrs(7719), self.Dial(d) != nil)
	}
	st.TUN = true
	self, _, _ = Status(context.Background(), d)
	if self.Userspace || fmt.Sprint(self.ListenAddrs(7719)) != "[100.64.0.1:7719 [fd7a:115c:a1e0::1]:7719]" || self.Dial(d) != nil {
		t.Errorf("TUN tailscaled: userspace %v, listen %v, dial through tailscaled %v", self.Userspace, self.ListenAddrs(7719), self.Dial(d) != nil)
	}
}

func TestProbeDialsThroughTailscaledAndSaysWhyNot(t *testing.T) {
	_, serving := serveRepo(t, allowAll{})
	_, refusing := serveRepo(t, denyAll{})
	closed := closedPort(t)
	host := func(u string) string { return strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/memory") }
	dials := &atomic.Int32{}
	d := fakeDaemon{dials: dials, routes: map[string]string{
		"100.64.0.2:7719": host(serving),
		"100.64.0.3:7719": host(refusing),
		"100.64.0.4:7719": closed,
	}}
	ip := func(s string) []string { return []string{s} }
	peers := []Peer{
		{Name: "serves", Online: true, SameUser: true, IPs: ip("100.64.0.2")},
		{Name: "refuses", Online: true, SameUser: true, IPs: ip("100.64.0.3")},
		{Name: "noserve", Online: true, SameUser: true, IPs: ip("100.64.0.4")},
		{Name: "tagged", Online: true, Tags: []string{"tag:anamnesis"}, IPs: ip("100.64.0.5")},
		{Name: "offline", SameUser: true, IPs: ip("100.64.0.6")},
		{Name: "stranger", Online: true, IPs: ip("100.64.0.7")},
	}
	Probe(context.Background(), peers, ProbeOptions{Port: 7719, Timeout: 5 * time.Second, AllowTags: []string{"tag:anamnesis"}, Dial: Dialer(d)})
	if p := peers[0]; !p.Probed || !p.Serves || p.URL != "http://100.64.0.2:7719/memory" || p.Reason != "" {
		t.Errorf("serving peer: %+v", p)
	}
	if p := peers[1]; !p.Probed || p.Serves || !strings.Contains(p.Reason, "403") {
		t.Errorf("refusing peer: %+v", p)
	}
	if p := peers[2]; !p.Probed || p.Serves || !strings.Contains(p.Reason, "refused") {
		t.Errorf("peer not serving: %+v", p)
	}
	if p := peers[3]; !p.Probed || p.Serves || !strings.Contains(p.Reason, "no route to 100.64.0.5") {
		t.Errorf("allowed tag, unreachable: %+v", p)
	}
	for _, p := range peers[4:] {
		if p.Probed || p.Serves {
			t.Errorf("%s should not be asked: %+v", p.Name, p)
		}
	}
	if n := dials.Load(); n != 4 {
		t.Errorf("%d dials through tailscaled, want 4 (one per probed peer)", n)
	}
}

type allowAll struct{}

func (allowAll) Authorize(context.Context, string) (string, error) { return "tester", nil }

type denyAll struct{}

func (denyAll) Authorize(context.Context, string) (string, error) { return "", gitsync.ErrForbidden }

// serveRepo serves a one-commit repository with the upload-pack endpoint
// of `anamnesis serve` on loopback and returns its URL.
func serveRepo(t *testing.T, auth gitsync.Authorizer) (repo, url string) {
	repo = filepath.Join(t.TempDir(), "memory")
	testutil.Git(t, t.TempDir(), "init", "-q", "-b", "main", repo)
	os.MkdirAll(filepath.Join(repo, "semantic"), 0o755)
	os.WriteFile(filepath.Join(repo, "semantic", "a.md"), []byte("first note\n"), 0o644)
	testutil.Git(t, repo, "add", ".")
	testutil.Git(t, repo, "commit", "-q", "-m", "first")
	srv := httptest.NewServer(&gitsync.Handler{GitDir: filepath.Join(repo, ".git"), Auth: auth})
	t.Cleanup(srv.Close)
	return repo, srv.URL + "/memory"
}

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Summarize is typed: a missing socket is "not running" with the socket
// named, without parsing an error message.
func TestSummarizeWithoutTailscaled(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "no.sock")
	s := Summarize(context.Background(), sock)
	if s.Running {
		t.Fatal("running without tailscaled")
	}
	if want := "tailscaled not running (no answer on " + sock + ")"; s.String() != want {
		t.Errorf("summary %q, want %q", s, want)
	}
	down := &DownError{State: "Tailscale is Stopped on this machine", Fix: "run `tailscale up` to log in"}
	if !errors.Is(down, ErrNoTailnet) || down.Error() != "no tailnet: Tailscale is Stopped on this machine; run `tailscale up` to log in" {
		t.Errorf("DownError: %v", down)
	}
}
