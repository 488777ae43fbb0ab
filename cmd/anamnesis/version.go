package main

import (
	"runtime/debug"
	"strings"
)

// versionString is what --version prints after the name: the -ldflags
// version if one was set, else the module version the go command
// recorded (a tag or pseudo-version for `go install …@version`, "(devel)"
// for a local build), with the git commit and whether the tree had
// uncommitted changes when the build came from a checkout.
func versionString(ldflags string, bi *debug.BuildInfo) string {
	v := ldflags
	var rev string
	var modified bool
	if bi != nil {
		if v == "" || v == "dev" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" || v == "dev" || v == "(devel)" {
		v = "devel"
	}
	var extra []string
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		extra = append(extra, "commit "+rev)
	}
	if modified {
		extra = append(extra, "modified")
	}
	if v == "devel" && rev == "" {
		extra = append(extra, "no version or commit recorded in this build")
	}
	if len(extra) > 0 {
		v += " (" + strings.Join(extra, ", ") + ")"
	}
	return v
}

// buildVersion is versionString for this binary.
func buildVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return versionString(version, bi)
}
