package tailnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

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
		if err != nil && !errors.Is(err, ErrForbidden) {
			t.Errorf("%s: error should be ErrForbidden: %v", addr, err)
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
		if _, err := (LoopbackAuth{}).Authorize(context.Background(), addr); ok != (err == nil) {
			t.Errorf("%s: %v", addr, err)
		}
	}
}
