package tailnet

import (
	"errors"
	"net"
	"path/filepath"
	"testing"
)

// A missing socket means "not running" unless the macOS app answers.
func TestPresentFallsBackToTheApp(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "tailscaled.sock")
	d := localDaemon{socket: missing}
	var op *net.OpError
	if err := d.present(); !errors.As(err, &op) {
		t.Fatalf("missing socket, no app: %v, want a *net.OpError", err)
	}
	d.appPort = func() error { return nil }
	if err := d.present(); err != nil {
		t.Fatalf("missing socket, app answering: %v", err)
	}
	d.appPort = func() error { return errors.New("no token found") }
	if err := d.present(); !errors.As(err, &op) {
		t.Fatalf("missing socket, no app token: %v, want a *net.OpError", err)
	}
}

// A socket the user names is the only way in, on every OS.
func TestNamedSocketIsUsedAlone(t *testing.T) {
	d := LocalDaemon(filepath.Join(t.TempDir(), "s")).(localDaemon)
	if !d.c.UseSocketOnly || d.appPort != nil {
		t.Errorf("a named socket: UseSocketOnly %v, app fallback %v", d.c.UseSocketOnly, d.appPort != nil)
	}
}

// The default socket tries the app only where the app exists (macOS).
func TestDefaultSocketAppFallback(t *testing.T) {
	d := LocalDaemon("").(localDaemon)
	if got := d.appPort != nil && !d.c.UseSocketOnly; got != appLocalAPI {
		t.Errorf("default socket: app fallback %v, want %v on this OS", got, appLocalAPI)
	}
}
