package main

import (
	"runtime/debug"
	"strings"
)

// stamp is what a release build sets with -ldflags -X (see main.go's
// version, commit and built): the go command records no commit for a
// build from a git worktree or with -buildvcs=false, and never a date.
type stamp struct{ version, commit, built string }

// versionString is what --version prints after the name: the -ldflags
// version if one was set, else the module version the go command
// recorded (a tag or pseudo-version for `go install …@version`, "(devel)"
// for a local build), with the git commit (stamped, else recorded) and
// whether the tree had uncommitted changes when the build came from a
// checkout, and the stamped build date.
func versionString(st stamp, bi *debug.BuildInfo) string {
	v := moduleVersion(st.version, bi)
	rev, modified := st.commit, false
	if rev == "" {
		rev, modified = recordedCommit(bi)
	}
	var extra []string
	if rev != "" {
		extra = append(extra, "commit "+rev[:min(len(rev), 12)])
	}
	if modified {
		extra = append(extra, "modified")
	}
	if st.built != "" {
		extra = append(extra, "built "+st.built)
	}
	if v == "devel" && rev == "" {
		extra = append(extra, "no version or commit recorded in this build")
	}
	if len(extra) > 0 {
		v += " (" + strings.Join(extra, ", ") + ")"
	}
	return v
}

// moduleVersion is the stamped version, else the one the go command
// recorded, else "devel".
func moduleVersion(stamped string, bi *debug.BuildInfo) string {
	v := stamped
	if (v == "" || v == "dev") && bi != nil {
		v = bi.Main.Version
	}
	if v == "" || v == "dev" || v == "(devel)" {
		return "devel"
	}
	return v
}

// recordedCommit is the git commit the go command recorded, and whether
// the tree had uncommitted changes.
func recordedCommit(bi *debug.BuildInfo) (rev string, modified bool) {
	if bi == nil {
		return "", false
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return rev, modified
}

// buildVersion is versionString for this binary.
func buildVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return versionString(stamp{version, commit, built}, bi)
}
