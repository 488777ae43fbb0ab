// Package shellquote quotes a string for POSIX sh. Both kinds of hook
// anamnesis installs are shell text (git hook scripts and the commands
// Claude Code runs), and both must survive a binary or home path with
// spaces or quotes in it.
package shellquote

import "strings"

// Quote returns s as one sh word: in single quotes, with each single quote
// in s closed, escaped with a backslash and reopened.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
