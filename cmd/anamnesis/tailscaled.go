package main

import (
	"context"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/tailnet"
)

// tailscaled is the Store's view of the tailnet (anamnesis.Tailnet),
// backed by this machine's tailscaled through package tailnet; the root
// package does not link Tailscale.
type tailscaled struct{}

var _ anamnesis.Tailnet = tailscaled{}

func (tailscaled) FindMesh(ctx context.Context, socket string, allowTags []string) (anamnesis.Mesh, error) {
	m, err := tailnet.FindMesh(ctx, socket, allowTags)
	if err != nil {
		return anamnesis.Mesh{}, err
	}
	return anamnesis.Mesh{URLs: m.URLs, Dial: gitsync.DialFunc(m.Dial), Probed: m.Probed, Unreachable: m.Unreachable, Offline: m.Offline}, nil
}

func (tailscaled) UserspaceDial(ctx context.Context, socket string) gitsync.DialFunc {
	if d := tailnet.UserspaceDial(ctx, socket); d != nil {
		return gitsync.DialFunc(d)
	}
	return nil // a nil func, not a non-nil DialFunc holding nil
}

func (tailscaled) Summary(ctx context.Context, socket string) anamnesis.TailnetSummary {
	s := tailnet.Summarize(ctx, socket)
	return anamnesis.TailnetSummary{Running: s.Running, Text: s.String()}
}
