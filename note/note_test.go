package note

import (
	"testing"
	"time"
)

var fixedTime = time.Date(2026, 11, 22, 0, 6, 32, 0, time.UTC)

func TestNewIDIsULIDShaped(t *testing.T) {
	a, b := NewID(fixedTime), NewID(fixedTime)
	if len(a) != 26 || !ValidID(a) || a == b {
		t.Fatalf("bad ids %q %q", a, b)
	}
}

func TestValidID(t *testing.T) {
	for _, s := range []string{"01M8096W5Y5VJW7T5A4YN4196Z", "abc", "a-b_c"} {
		if !ValidID(s) {
			t.Errorf("%q should be valid", s)
		}
	}
	for _, s := range []string{"", "../x", "a/b", "a.md", ".", "-x", "a b", "x\n"} {
		if ValidID(s) {
			t.Errorf("%q should be invalid", s)
		}
	}
}

func TestNowFormat(t *testing.T) {
	if got := Now(fixedTime.In(time.FixedZone("x", 3600))); got != "2026-11-22T00:06:32+00:00" {
		t.Fatalf("Now = %q", got)
	}
}

func TestValidate(t *testing.T) {
	n := New(TypeSemantic, "title", "", fixedTime)
	if err := n.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := *n
	bad.Type = "../x"
	if bad.Validate() == nil {
		t.Error("bad type accepted")
	}
	bad = *n
	bad.Scope = "everywhere"
	if bad.Validate() == nil {
		t.Error("bad scope accepted")
	}
	bad = *n
	bad.Title = "  "
	if bad.Validate() == nil {
		t.Error("empty title accepted")
	}
}
