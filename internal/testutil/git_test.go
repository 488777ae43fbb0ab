package testutil

import (
	"strings"
	"testing"
)

func TestBareHubAndGit(t *testing.T) {
	hub := BareHub(t)
	if out := Git(t, hub, "rev-parse", "--is-bare-repository"); strings.TrimSpace(out) != "true" {
		t.Errorf("not bare: %q", out)
	}
	if out := Git(t, hub, "symbolic-ref", "HEAD"); strings.TrimSpace(out) != "refs/heads/main" {
		t.Errorf("HEAD %q", out)
	}
	if _, err := TryGit(hub, "no-such-command"); err == nil {
		t.Error("TryGit hid a failure")
	}
}
