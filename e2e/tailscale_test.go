//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const tailscaleVersion = "v1.102.5"

// goInstall builds a Go command into cacheDir()/bin once.
func goInstall(t *testing.T, pkg, name string) string {
	t.Helper()
	bin := filepath.Join(cacheDir(), "bin")
	p := filepath.Join(bin, name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", pkg)
	cmd.Dir = os.TempDir() // outside this module: the command's own go.mod decides its dependencies
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install %s: %v\n%s", pkg, err, out)
	}
	return p
}

// loggedOutTailscaled starts a real tailscaled (userspace networking, its
// own socket and state, never logged in) and returns its socket.
func loggedOutTailscaled(t *testing.T) string {
	t.Helper()
	tsd := goInstall(t, "tailscale.com/cmd/tailscaled@"+tailscaleVersion, "tailscaled")
	dir := t.TempDir()
	sock := filepath.Join(dir, "tailscaled.sock")
	cmd := exec.Command(tsd, "--tun=userspace-networking", "--socket="+sock, "--statedir="+filepath.Join(dir, "state"), "--port=0")
	log, _ := os.Create(filepath.Join(dir, "tailscaled.log"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			return sock
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(filepath.Join(dir, "tailscaled.log"))
			t.Fatalf("tailscaled did not create its socket:\n%s", data)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPeersWithALoggedOutTailscaled runs a real tailscaled (userspace
// networking, its own socket and state, never logged in) and checks that
// peers and serve explain the state in one line and exit 1.
func TestPeersWithALoggedOutTailscaled(t *testing.T) {
	sock := loggedOutTailscaled(t)
	u := newUser(t)
	u.anamnesis("init", "--yes", "--local-only", "--no-claude", "--no-mcp", "--no-sync") // serve needs a store
	for _, args := range [][]string{
		{"peers", "--tailscale-socket", sock},
		{"serve", "--tailscale-socket", sock},
	} {
		out, errs, err := u.run(u.home, "", u.bin, args...)
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 1 {
			t.Errorf("%v: want exit 1, got %v\n%s%s", args, err, out, errs)
		}
		line := strings.TrimSpace(errs)
		if strings.Contains(line, "\n") || !strings.Contains(line, "tailscale up") || strings.Contains(line, "goroutine") {
			t.Errorf("%v: want one line telling to run `tailscale up`, got:\n%s", args, errs)
		}
		if !strings.Contains(line, "NeedsLogin") && !strings.Contains(line, "NoState") && !strings.Contains(line, "Stopped") {
			t.Errorf("%v: the state is not named: %s", args, line)
		}
	}
	// status shows the same state without failing.
	u.anamnesis("write", "--type", "semantic", "--title", "t", "--body", "b")
	if out := u.anamnesis("status", "--json"); !strings.Contains(out, `"tailnet"`) {
		t.Errorf("status lacks the tailnet: %s", out)
	}
}

// TestTailscaleSocketSettingWithARealTailscaled: the socket of a real
// tailscaled started with its own --socket reaches status, doctor, sync
// and peers from the global flag, the environment or config.json; each
// then reports that tailscaled's state (logged out), not the system's.
func TestTailscaleSocketSettingWithARealTailscaled(t *testing.T) {
	sock := loggedOutTailscaled(t)
	u := newUser(t)
	u.anamnesis("--tailscale-socket", sock, "init", "--yes", "--remote", "tailnet", "--no-claude", "--no-mcp", "--no-sync")
	cfg, _ := os.ReadFile(filepath.Join(u.store, "config.json"))
	if !strings.Contains(string(cfg), sock) {
		t.Fatalf("init did not record the socket:\n%s", cfg)
	}
	loggedOut := func(s string) bool {
		return strings.Contains(s, "NeedsLogin") || strings.Contains(s, "NoState") || strings.Contains(s, "Stopped")
	}
	if out := u.anamnesis("status"); !loggedOut(out) {
		t.Errorf("status (socket from config.json) does not show the logged-out tailscaled:\n%s", out)
	}
	if out, _, _ := u.run(u.home, "", u.bin, "doctor"); !loggedOut(out) {
		t.Errorf("doctor (socket from config.json) does not show the logged-out tailscaled:\n%s", out)
	}
	// A wrong socket in config.json, the right one from the environment.
	os.WriteFile(filepath.Join(u.store, "config.json"), []byte(strings.Replace(string(cfg), sock, sock+".nowhere", 1)), 0o600)
	env := u.env
	u.env = append(append([]string{}, env...), "ANAMNESIS_TAILSCALE_SOCKET="+sock)
	for _, args := range [][]string{{"sync"}, {"peers"}} {
		out, errs, err := u.run(u.home, "", u.bin, args...)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !loggedOut(errs) || !strings.Contains(errs, "tailscale up") {
			t.Errorf("%v (socket from the environment): want exit 1 naming the logged-out state, got %v\n%s%s", args, err, out, errs)
		}
	}
	u.env = env
	if _, errs, _ := u.run(u.home, "", u.bin, "sync"); !strings.Contains(errs, sock+".nowhere") {
		t.Errorf("sync with config.json's socket does not name it: %s", errs)
	}
}
