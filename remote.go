package anamnesis

import (
	"context"
	"fmt"
	"strings"

	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
)

// Remote is the remote setting as read: one hub, the tailnet, or a list
// of peer URLs. Sync and Doctor read it through ParseRemote alone.
type Remote struct {
	// Hub is a git URL or path ("" for none or a mesh).
	Hub string
	// Tailnet: "tailnet", this user's machines that serve anamnesis,
	// found through tailscaled.
	Tailnet bool
	// Peers are URLs given as "peers:URL[,URL...]" or any comma-separated
	// list.
	Peers []string
}

// ParseRemote reads a remote setting (config.json's remote or
// ANAMNESIS_GIT_REMOTE).
func ParseRemote(s string) Remote {
	s = strings.TrimSpace(s)
	switch {
	case s == "tailnet":
		return Remote{Tailnet: true}
	case strings.Contains(s, ","), strings.HasPrefix(s, "peers:"):
		var r Remote
		for _, u := range strings.Split(strings.TrimPrefix(s, "peers:"), ",") {
			if u = strings.TrimSpace(u); u != "" {
				r.Peers = append(r.Peers, u)
			}
		}
		return r
	}
	return Remote{Hub: s}
}

// IsMesh reports whether r syncs with peers rather than a hub.
func (r Remote) IsMesh() bool { return r.Tailnet || len(r.Peers) > 0 }

// Tailnet is what the Store needs of Tailscale for a mesh sync and for
// status. cmd hands the Store one backed by tailscaled (package tailnet),
// so this package and its users do not link Tailscale. socket is
// tailscaled's socket ("" the system's).
type Tailnet interface {
	// FindMesh finds the peers to sync with: this user's online machines,
	// and nodes with a tag in allowTags, that serve anamnesis.
	FindMesh(ctx context.Context, socket string, allowTags []string) (Mesh, error)
	// UserspaceDial is tailscaled's dialer when it runs with userspace
	// networking, else nil.
	UserspaceDial(ctx context.Context, socket string) gitsync.DialFunc
	// Summary is tailscaled's state in one line.
	Summary(ctx context.Context, socket string) TailnetSummary
}

// Mesh is what a mesh sync fetches from, as found on the tailnet.
type Mesh struct {
	URLs []string
	// Dial reaches the peers; nil: the kernel reaches them.
	Dial gitsync.DialFunc
	// Probed counts the peers asked whether they serve; Unreachable says,
	// per peer asked in vain, why.
	Probed      int
	Unreachable []string
	// Offline counts this user's machines that are offline.
	Offline int
}

// TailnetSummary is tailscaled's state: Text is one line ("running as
// NAME (IPS), N peers, M online", or what is wrong).
type TailnetSummary struct {
	Running bool
	Text    string
}

// tailnetSummary asks the Tailnet, if the Store was given one.
func (s *Store) tailnetSummary(ctx context.Context) TailnetSummary {
	if s.tailnet == nil {
		return TailnetSummary{Text: "unknown (no tailnet support in this program)"}
	}
	return s.tailnet.Summary(ctx, s.TailscaleSocket())
}

// meshTargets is what a sync fetches from when the remote is not a hub.
type meshTargets struct {
	peers []string
	// dial reaches the peers through tailscaled (userspace networking);
	// nil: the kernel reaches them.
	dial gitsync.DialFunc
	// probed counts the peers asked whether they serve; unreachable says,
	// per peer asked in vain, why.
	probed      int
	unreachable []string
	// warning, when set, says why nothing was even asked.
	warning string
}

// syncTargets reads the remote setting: a hub, "tailnet" (the peers of
// this tailnet user that serve anamnesis, found through tailscaled), or
// peer URLs.
func (s *Store) syncTargets(ctx context.Context) (hub string, mesh meshTargets, err error) {
	r := ParseRemote(s.Remote())
	switch {
	case r.Tailnet:
		if s.tailnet == nil {
			return "", mesh, fmt.Errorf("mesh sync: this program cannot reach tailscaled; local notes are committed")
		}
		m, err := s.tailnet.FindMesh(ctx, s.TailscaleSocket(), s.config.AllowTags)
		if err != nil {
			return "", mesh, fmt.Errorf("mesh sync: %w; local notes are committed", err)
		}
		mesh = meshTargets{peers: m.URLs, dial: m.Dial, probed: m.Probed, unreachable: m.Unreachable}
		if mesh.probed == 0 {
			gone := ""
			if m.Offline > 0 {
				gone = fmt.Sprintf(" (%d offline)", m.Offline)
			}
			mesh.warning = "mesh sync: no peer to fetch from: none of your other machines (nor a node with a tag in tailnet_allow_tags) is online on the tailnet" + gone + "; local notes are committed"
		}
		return "", mesh, nil
	case len(r.Peers) > 0:
		mesh.peers = r.Peers
		if s.tailnet != nil {
			mesh.dial = s.tailnet.UserspaceDial(ctx, s.TailscaleSocket())
		}
		return "", mesh, nil
	}
	return r.Hub, mesh, nil
}

// noneReachable is the error of a mesh sync that asked peers and got
// nothing from any of them: never a silent sync that fetched nothing.
func noneReachable(n int, why []string) error {
	return fmt.Errorf("mesh sync: %s probed, none reachable: %s; local notes are committed", textfmt.Count(n, "peer", "peers"), strings.Join(why, "; "))
}
