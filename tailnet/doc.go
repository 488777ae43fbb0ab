// Package tailnet lets a user's machines share memory over their Tailscale
// tailnet without a hub: each machine serves its memory/ repository
// read-only over git's smart HTTP protocol (upload-pack only, so nobody
// writes into another machine's checkout), every request authorized by
// asking the local tailscaled who is calling (WhoIs), and peers fetch from
// each other and merge with the same conflict-free merge as a hub sync.
// It talks to tailscaled through tailscale.com/client/local.
package tailnet
