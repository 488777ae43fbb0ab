//go:build darwin

package tailnet

// appLocalAPI: on macOS the Tailscale app's tailscaled may have no Unix
// socket; client/local then reaches its LocalAPI on a loopback port.
const appLocalAPI = true
