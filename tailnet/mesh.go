package tailnet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Mesh is what a mesh sync fetches from, as found through tailscaled.
type Mesh struct {
	// URLs are the peers that serve anamnesis to this machine.
	URLs []string
	// Dial reaches them through tailscaled (userspace networking); nil:
	// the kernel reaches them.
	Dial DialFunc
	// Probed counts the peers asked whether they serve; Unreachable says,
	// per peer asked in vain, why ("name (ip): reason").
	Probed      int
	Unreachable []string
	// Offline counts this user's machines that are offline.
	Offline int
}

// FindMesh asks tailscaled (at socket; "" the system's) for this user's
// machines, and for nodes with a tag in allowTags, and probes each online
// one for `anamnesis serve` on DefaultPort.
func FindMesh(ctx context.Context, socket string, allowTags []string) (Mesh, error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	d := LocalDaemon(socket)
	self, ps, err := Status(dctx, d)
	if err != nil {
		return Mesh{}, err
	}
	m := Mesh{Dial: self.Dial(d)}
	Probe(dctx, ps, ProbeOptions{Port: DefaultPort, Timeout: 2 * time.Second, AllowTags: allowTags, Dial: m.Dial})
	for _, p := range ps {
		switch {
		case p.Serves:
			m.URLs = append(m.URLs, p.URL)
		case p.Probed:
			m.Unreachable = append(m.Unreachable, p.Name+" ("+p.IPs[0]+"): "+p.Reason)
		case !p.Online && p.SameUser:
			m.Offline++
		}
		if p.Probed {
			m.Probed++
		}
	}
	return m, nil
}

// UserspaceDial is tailscaled's dialer when it runs with userspace
// networking (the only way to a tailnet address then), else nil: a peer
// URL may name a tailnet node (a tagged node lists its peers this way)
// or a machine on the LAN, and tailscaled reaches both.
func UserspaceDial(ctx context.Context, socket string) DialFunc {
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	d := LocalDaemon(socket)
	self, _, err := Status(dctx, d)
	if err != nil {
		return nil // no usable tailscaled: the peers are reached directly
	}
	return self.Dial(d)
}

// Summary is tailscaled's state on this machine, for status and doctor.
type Summary struct {
	Running       bool
	Self          Self
	Peers, Online int
	// Problem says why it is not running, one line.
	Problem string
}

// Summarize asks tailscaled (at socket; "" the system's) with a short
// timeout: status must stay fast.
func Summarize(ctx context.Context, socket string) Summary {
	tctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	self, peers, err := Status(tctx, LocalDaemon(socket))
	if err != nil {
		var down *DownError
		switch {
		case errors.As(err, &down) && down.NotRunning:
			return Summary{Problem: "tailscaled not running (no answer on " + SocketPath(socket) + ")"}
		case errors.As(err, &down):
			return Summary{Problem: down.State}
		}
		return Summary{Problem: err.Error()}
	}
	sum := Summary{Running: true, Self: self, Peers: len(peers)}
	for _, p := range peers {
		if p.Online {
			sum.Online++
		}
	}
	return sum
}

// String is the one-line summary: "running as NAME (IPS), N peers, M
// online", or the problem.
func (s Summary) String() string {
	if !s.Running {
		return s.Problem
	}
	mode := ""
	if s.Self.Userspace {
		mode = ", userspace networking"
	}
	return fmt.Sprintf("running as %s (%s%s), %d peers, %d online", s.Self.Name, strings.Join(s.Self.IPs, " "), mode, s.Peers, s.Online)
}
