package tailnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"tailscale.com/client/local"
	"tailscale.com/client/tailscale/apitype"
	"tailscale.com/ipn/ipnstate"
	"tailscale.com/paths"
	"tailscale.com/tailcfg"
)

// DefaultPort is where `anamnesis serve` listens on a machine's tailnet
// addresses.
const DefaultPort = 7719

// Daemon is the part of tailscaled's local API anamnesis uses; the local
// client implements it, tests stand in for it.
type Daemon interface {
	Status(ctx context.Context) (*ipnstate.Status, error)
	WhoIs(ctx context.Context, remoteAddr string) (*apitype.WhoIsResponse, error)
}

// LocalDaemon talks to tailscaled on this machine ("" for the default
// socket).
func LocalDaemon(socket string) Daemon {
	socket = SocketPath(socket)
	return localDaemon{c: &local.Client{Socket: socket, UseSocketOnly: true}, socket: socket}
}

// SocketPath is socket, or the system's tailscaled socket for "".
func SocketPath(socket string) string {
	if socket == "" {
		return paths.DefaultTailscaledSocket()
	}
	return socket
}

// localDaemon fails at once when the socket does not exist: the local
// client keeps retrying a missing socket until its context ends (it waits
// for a tailscaled that is starting), which would make every `status`
// wait on machines without Tailscale.
type localDaemon struct {
	c      *local.Client
	socket string
}

func (d localDaemon) present() error {
	if _, err := os.Stat(d.socket); err != nil {
		return &net.OpError{Op: "dial", Net: "unix", Err: fmt.Errorf("connect %s: %w", d.socket, err)}
	}
	return nil
}

func (d localDaemon) Status(ctx context.Context) (*ipnstate.Status, error) {
	if err := d.present(); err != nil {
		return nil, err
	}
	return d.c.Status(ctx)
}

func (d localDaemon) WhoIs(ctx context.Context, addr string) (*apitype.WhoIsResponse, error) {
	if err := d.present(); err != nil {
		return nil, err
	}
	return d.c.WhoIs(ctx, addr)
}

// ErrNoTailnet means tailscaled cannot be used: not running, or not
// logged in. Its message says what to do.
var ErrNoTailnet = errors.New("no tailnet")

// Self describes this machine on the tailnet.
type Self struct {
	Name   string
	User   tailcfg.UserID
	IPs    []string
	Suffix string
}

// Peer is another node of the tailnet.
type Peer struct {
	Name     string   `json:"name"`
	DNSName  string   `json:"dns_name"`
	OS       string   `json:"os"`
	Online   bool     `json:"online"`
	Tags     []string `json:"tags"`
	SameUser bool     `json:"same_user"`
	IPs      []string `json:"ips"`
	Serves   bool     `json:"serves_anamnesis"`
	URL      string   `json:"url,omitempty"` // where its memory is served, when it is
}

// Status reads this machine's and its peers' state from tailscaled.
func Status(ctx context.Context, d Daemon) (Self, []Peer, error) {
	st, err := d.Status(ctx)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) || strings.Contains(err.Error(), "connect") {
			return Self{}, nil, fmt.Errorf("%w: tailscaled is not running or its socket is unreachable (%v); start Tailscale (`sudo systemctl start tailscaled && tailscale up`)", ErrNoTailnet, err)
		}
		return Self{}, nil, fmt.Errorf("%w: tailscaled: %v", ErrNoTailnet, err)
	}
	if st.BackendState != "Running" {
		return Self{}, nil, fmt.Errorf("%w: Tailscale is %s on this machine; run `tailscale up` to log in", ErrNoTailnet, st.BackendState)
	}
	self := Self{}
	if st.CurrentTailnet != nil {
		self.Suffix = st.CurrentTailnet.MagicDNSSuffix
	}
	if st.Self != nil {
		self.Name, self.User = st.Self.HostName, st.Self.UserID
	}
	for _, ip := range st.TailscaleIPs {
		self.IPs = append(self.IPs, ip.String())
	}
	var peers []Peer
	for _, k := range st.Peers() {
		ps := st.Peer[k]
		p := Peer{Name: ps.HostName, DNSName: strings.TrimSuffix(ps.DNSName, "."), OS: ps.OS, Online: ps.Online,
			SameUser: st.Self != nil && ps.UserID == st.Self.UserID, Tags: []string{}}
		if ps.Tags != nil {
			p.Tags = ps.Tags.AsSlice()
		}
		for _, ip := range ps.TailscaleIPs {
			p.IPs = append(p.IPs, ip.String())
		}
		peers = append(peers, p)
	}
	sort.Slice(peers, func(i, j int) bool { return peers[i].Name < peers[j].Name })
	return self, peers, nil
}

// Probe marks the online peers that serve anamnesis on port (a GET of the
// upload-pack advertisement answering 200), in parallel, each bounded by
// timeout. Allowed peers eligible: same user, or a tag in allowTags.
func Probe(ctx context.Context, peers []Peer, port int, timeout time.Duration, allowTags []string) {
	var wg sync.WaitGroup
	client := &http.Client{Timeout: timeout}
	for i := range peers {
		p := &peers[i]
		if !p.Online || len(p.IPs) == 0 || !(p.SameUser || anyTag(p.Tags, allowTags)) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := fmt.Sprintf("http://%s/memory", net.JoinHostPort(p.IPs[0], fmt.Sprint(port)))
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/info/refs?service=git-upload-pack", nil)
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				p.Serves, p.URL = true, url
			}
		}()
	}
	wg.Wait()
}

func anyTag(tags, allowed []string) bool {
	for _, t := range tags {
		if slices.Contains(allowed, t) {
			return true
		}
	}
	return false
}

// WhoIsAuth authorizes callers of the same tailnet user (untagged nodes),
// or nodes carrying one of AllowTags; anyone else, or anything tailscaled
// does not know (a non-tailnet address), is refused.
type WhoIsAuth struct {
	D         Daemon
	User      tailcfg.UserID
	AllowTags []string
}

// Authorize implements Authorizer.
func (a WhoIsAuth) Authorize(ctx context.Context, remoteAddr string) (string, error) {
	who, err := a.D.WhoIs(ctx, remoteAddr)
	if err != nil {
		return "", fmt.Errorf("%w: %s is not a known tailnet node (%v)", ErrForbidden, remoteAddr, err)
	}
	if who == nil || who.Node == nil || who.UserProfile == nil {
		return "", fmt.Errorf("%w: tailscaled gave no identity for %s", ErrForbidden, remoteAddr)
	}
	name := who.Node.ComputedName
	if name == "" {
		name = who.Node.Name
	}
	if anyTag(who.Node.Tags, a.AllowTags) {
		return name, nil
	}
	if len(who.Node.Tags) == 0 && who.UserProfile.ID == a.User {
		return name + " (" + who.UserProfile.LoginName + ")", nil
	}
	return "", fmt.Errorf("%w: %s (%s) belongs to another user or carries no allowed tag", ErrForbidden, name, who.UserProfile.LoginName)
}

// LoopbackAuth lets callers on this machine's loopback addresses in, for
// tests and for serving to a local process; everything else is refused.
type LoopbackAuth struct{}

// Authorize implements Authorizer.
func (LoopbackAuth) Authorize(_ context.Context, remoteAddr string) (string, error) {
	host, _, err := net.SplitHostPort(remoteAddr)
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsLoopback() {
		return "loopback " + host, nil
	}
	return "", fmt.Errorf("%w: %s is not a loopback address", ErrForbidden, remoteAddr)
}
