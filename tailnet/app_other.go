//go:build !darwin

package tailnet

// appLocalAPI: outside macOS tailscaled is reached on its socket (a named
// pipe on Windows) only.
const appLocalAPI = false
