package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTailscaleSocketReachesEveryCommand: one setting names tailscaled's
// socket for every command that talks to it, from the global flag, the
// environment or config.json; a socket that is not there is named.
func TestTailscaleSocketReachesEveryCommand(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "that", "tailscaled.sock")
	home := t.TempDir()
	initHome(t, home)
	notRunning := "tailscaled is not running or its socket is unreachable ("
	viaFlag := func(args ...string) result {
		return anm(t, home, "", append([]string{"--tailscale-socket", sock}, args...)...)
	}
	viaEnv := func(args ...string) result {
		return runCmd(t, append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=clitest", "ANAMNESIS_TAILSCALE_SOCKET="+sock), "", args...)
	}
	for name, run := range map[string]func(...string) result{"flag": viaFlag, "env": viaEnv} {
		if r := run("status"); r.code != 0 || !strings.Contains(r.stdout, "tailscaled not running (no answer on "+sock+")") {
			t.Errorf("%s: status: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
		}
		for _, cmd := range [][]string{{"peers"}, {"serve"}} {
			if r := run(cmd...); r.code != 1 || !strings.Contains(r.stderr, notRunning) || !strings.Contains(r.stderr, sock) {
				t.Errorf("%s: %v: exit %d\n%s%s", name, cmd, r.code, r.stdout, r.stderr)
			}
		}
	}
	// init records it (with the remote) for every later command, the
	// hooks' background syncs included.
	mustOK(t, viaFlag("init", "--yes", "--remote", "tailnet", "--no-claude", "--no-mcp", "--no-git-hooks", "--no-sync"))
	cfg, _ := os.ReadFile(filepath.Join(home, "config.json"))
	if !strings.Contains(string(cfg), `"tailscale_socket": "`+sock+`"`) {
		t.Fatalf("config.json lacks tailscale_socket:\n%s", cfg)
	}
	if r := anm(t, home, "", "sync"); r.code != 1 || !strings.Contains(r.stderr, notRunning) || !strings.Contains(r.stderr, sock) {
		t.Errorf("sync (socket from config.json): exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := anm(t, home, "", "doctor"); !strings.Contains(r.stdout, "no answer on "+sock) {
		t.Errorf("doctor (socket from config.json): exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// After serve and peers, where it was first, the flag still works.
	if r := anm(t, home, "", "peers", "--tailscale-socket", sock+".other"); r.code != 1 || !strings.Contains(r.stderr, sock+".other") {
		t.Errorf("peers --tailscale-socket: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
