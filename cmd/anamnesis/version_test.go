package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionString(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.modified", Value: "true"}}
	for _, c := range []struct {
		ldflags stamp
		bi      *debug.BuildInfo
		want    string
	}{
		{stamp{version: "dev"}, &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"}, // go install …@v1.2.3
		{stamp{version: "dev"}, &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101000000-0123456789ab+dirty"}, Settings: vcs},
			"v0.0.0-20260101000000-0123456789ab+dirty (commit 0123456789ab, modified)"},
		{stamp{version: "dev"}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs[:1]}, "devel (commit 0123456789ab)"},
		{stamp{version: "v9.9.9"}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs}, "v9.9.9 (commit 0123456789ab, modified)"}, // -ldflags wins
		{stamp{version: "dev"}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel (no version or commit recorded in this build)"},
		{stamp{version: "dev"}, nil, "devel (no version or commit recorded in this build)"},
		// make release: everything stamped, whatever the go command recorded.
		{stamp{"v0.3.0", "fedcba9876543210fedcba9876543210fedcba98", "2026-11-24"}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			"v0.3.0 (commit fedcba987654, built 2026-11-24)"},
		{stamp{"v0.3.0", "fedcba9876543210fedcba9876543210fedcba98", "2026-11-24"}, nil, "v0.3.0 (commit fedcba987654, built 2026-11-24)"},
	} {
		if got := versionString(c.ldflags, c.bi); got != c.want {
			t.Errorf("versionString(%+v, %+v) = %q, want %q", c.ldflags, c.bi, got, c.want)
		}
	}
}
