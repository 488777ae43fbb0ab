package tailnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/anamnesis-memory/anamnesis/gitsync"
	"tailscale.com/client/local"
	"tailscale.com/client/tailscale/apitype"
	"tailscale.com/ipn/ipnstate"
	"tailscale.com/paths"
	"tailscale.com/safesocket"
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
	// UserDial connects to host:port through tailscaled, as a program on
	// this machine would; with userspace networking it is the only way to
	// reach the tailnet (the kernel has no route to it).
	UserDial(ctx context.Context, network, host string, port uint16) (net.Conn, error)
}

// DialFunc dials like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Dialer dials "host:port" addresses through tailscaled.
func Dialer(d Daemon) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("dial %s through tailscaled: %w", addr, err)
		}
		port, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("dial %s through tailscaled: bad port %q", addr, p)
		}
		c, err := d.UserDial(ctx, network, host, uint16(port))
		if err != nil {
			return nil, fmt.Errorf("dial %s through tailscaled: %w", addr, err)
		}
		return c, nil
	}
}

// LocalDaemon talks to tailscaled on this machine ("" for the default
// socket).
//
// With the default socket on macOS, the Tailscale app (App Store or
// standalone) is found too: its tailscaled has no socket at
// /var/run/tailscaled.socket but serves the LocalAPI on a loopback port
// with a token, which client/local finds by itself (safesocket's
// sameuserproof files, via lsof or /Library/Tailscale) unless
// UseSocketOnly is set. A socket named by the user is used alone.
func LocalDaemon(socket string) Daemon {
	app := socket == "" && appLocalAPI
	socket = SocketPath(socket)
	d := localDaemon{c: &local.Client{Socket: socket, UseSocketOnly: !app}, socket: socket}
	if app {
		d.appPort = func() error { _, _, err := safesocket.LocalTCPPortAndToken(); return err }
	}
	return d
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
	// appPort, when set, finds the macOS Tailscale app's LocalAPI port
	// (nil: the socket is the only way in).
	appPort func() error
}

func (d localDaemon) present() error {
	_, err := os.Stat(d.socket)
	if err == nil {
		return nil
	}
	if d.appPort != nil && d.appPort() == nil {
		return nil
	}
	return &net.OpError{Op: "dial", Net: "unix", Err: fmt.Errorf("connect %s: %w", d.socket, err)}
}

func (d localDaemon) Status(ctx context.Context) (*ipnstate.Status, error) {
	if err := d.present(); err != nil {
		return nil, err
	}
	return d.c.Status(ctx)
}

func (d localDaemon) UserDial(ctx context.Context, network, host string, port uint16) (net.Conn, error) {
	if err := d.present(); err != nil {
		return nil, err
	}
	return d.c.UserDial(ctx, network, host, port)
}

func (d localDaemon) WhoIs(ctx context.Context, addr string) (*apitype.WhoIsResponse, error) {
	if err := d.present(); err != nil {
		return nil, err
	}
	return d.c.WhoIs(ctx, addr)
}

// ErrNoTailnet means tailscaled cannot be used: not running, or not
// logged in. Errors that match it are a *DownError, whose message says
// what to do.
var ErrNoTailnet = errors.New("no tailnet")

// DownError says why tailscaled cannot be used, typed so that a summary
// need not parse the message.
type DownError struct {
	NotRunning bool   // no answer on the socket
	State      string // what is wrong, one clause ("Tailscale is Stopped on this machine")
	Fix        string // what to do; may be empty
}

func (e *DownError) Error() string {
	msg := ErrNoTailnet.Error() + ": " + e.State
	if e.Fix != "" {
		msg += "; " + e.Fix
	}
	return msg
}

// Is makes errors.Is(err, ErrNoTailnet) hold.
func (e *DownError) Is(target error) bool { return target == ErrNoTailnet }

// Self describes this machine on the tailnet.
type Self struct {
	Name   string
	User   tailcfg.UserID
	IPs    []string
	Suffix string
	// Userspace: tailscaled runs with userspace networking (no TUN: a
	// container, a rootless install). The tailnet addresses then exist
	// only inside tailscaled: nothing here can bind them, and the kernel
	// has no route to the peers.
	Userspace bool
}

// ListenAddrs are where `anamnesis serve` listens for the tailnet. With
// a TUN device, each Tailscale address. In userspace mode, 127.0.0.1:
// tailscaled's netstack forwards every incoming tailnet connection for
// its own addresses to 127.0.0.1 on the same port (IPv6 ones too), and
// registers it, so WhoIs of the forwarded connection still names the
// real caller; a purely local caller is unknown to WhoIs and refused.
func (s Self) ListenAddrs(port int) []string {
	p := strconv.Itoa(port)
	if s.Userspace {
		return []string{net.JoinHostPort("127.0.0.1", p)}
	}
	var out []string
	for _, ip := range s.IPs {
		out = append(out, net.JoinHostPort(ip, p))
	}
	return out
}

// Dial is how to reach the tailnet from this machine: through tailscaled
// in userspace mode, nil (the kernel's own dialer) with a TUN device.
func (s Self) Dial(d Daemon) DialFunc {
	if s.Userspace {
		return Dialer(d)
	}
	return nil
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
	Probed   bool     `json:"probed"`        // asked by Probe: online, and ours or an allowed tag
	Reason   string   `json:"unreachable,omitempty"`
}

// Status reads this machine's and its peers' state from tailscaled.
func Status(ctx context.Context, d Daemon) (Self, []Peer, error) {
	st, err := d.Status(ctx)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) || strings.Contains(err.Error(), "connect") {
			return Self{}, nil, &DownError{NotRunning: true, State: fmt.Sprintf("tailscaled is not running or its socket is unreachable (%v)", err),
				Fix: "start Tailscale (`sudo systemctl start tailscaled && tailscale up`)"}
		}
		return Self{}, nil, &DownError{State: "tailscaled: " + err.Error()}
	}
	if st.BackendState != "Running" {
		return Self{}, nil, &DownError{State: "Tailscale is " + st.BackendState + " on this machine", Fix: "run `tailscale up` to log in"}
	}
	self := Self{Userspace: !st.TUN}
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

// ProbeOptions tune Probe.
type ProbeOptions struct {
	Port      int           // where anamnesis serve listens (DefaultPort)
	Timeout   time.Duration // per peer
	AllowTags []string      // tagged nodes to probe besides the user's own
	Dial      DialFunc      // nil: the kernel's dialer (see Self.Dial)
}

// Probe marks the online peers that serve anamnesis on the port (a GET of
// the upload-pack advertisement answering 200), in parallel, each bounded
// by the timeout. Eligible peers: same user, or a tag in AllowTags. Each
// one asked is marked Probed; one that does not serve gets a short
// Reason, so a sync that found nobody can say why.
func Probe(ctx context.Context, peers []Peer, o ProbeOptions) {
	var wg sync.WaitGroup
	tr := &http.Transport{DisableKeepAlives: true}
	if o.Dial != nil {
		tr.DialContext = o.Dial
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Timeout: o.Timeout, Transport: tr}
	for i := range peers {
		p := &peers[i]
		if !p.Online || len(p.IPs) == 0 || !(p.SameUser || anyTag(p.Tags, o.AllowTags)) {
			continue
		}
		p.Probed = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := fmt.Sprintf("http://%s/memory", net.JoinHostPort(p.IPs[0], fmt.Sprint(o.Port)))
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/info/refs?service=git-upload-pack", nil)
			if err != nil {
				p.Reason = err.Error()
				return
			}
			resp, err := client.Do(req)
			if err != nil {
				p.Reason = probeError(err, o)
				return
			}
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				p.Serves, p.URL = true, url
			case http.StatusForbidden:
				p.Reason = "refuses this machine (403: it serves its own user's machines and the tags in its tailnet_allow_tags)"
			default:
				p.Reason = fmt.Sprintf("port %d answers %s: not anamnesis serve", o.Port, resp.Status)
			}
		}()
	}
	wg.Wait()
}

// probeError is why a peer could not be asked, in a few words on one
// line (tailscaled's dial errors carry its HTTP answer's body).
func probeError(err error, o ProbeOptions) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %s", o.Timeout)
	// "connection was refused" is how tailscaled's netstack says it.
	case errors.Is(err, syscall.ECONNREFUSED), strings.Contains(err.Error(), "connection refused"), strings.Contains(err.Error(), "connection was refused"):
		return fmt.Sprintf("connection refused: nothing listens on port %d (is `anamnesis serve` running there?)", o.Port)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL is the peer's address, already named
	}
	return strings.Join(strings.Fields(err.Error()), " ")
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
		return "", fmt.Errorf("%w: %s is not a known tailnet node (%v)", gitsync.ErrForbidden, remoteAddr, err)
	}
	if who == nil || who.Node == nil || who.UserProfile == nil {
		return "", fmt.Errorf("%w: tailscaled gave no identity for %s", gitsync.ErrForbidden, remoteAddr)
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
	return "", fmt.Errorf("%w: %s (%s) belongs to another user or carries no allowed tag", gitsync.ErrForbidden, name, who.UserProfile.LoginName)
}

// WhoIsAuth is what `anamnesis serve` authorizes callers with.
var _ gitsync.Authorizer = WhoIsAuth{}
