// Package gitsync keeps a store's memory/ directory in step between
// machines with go-git, without ever blocking on a conflict or losing a
// note.
//
// go-git cannot merge diverged branches, and its Pull, Checkout and Reset
// can silently overwrite local files, so this package does the parts git
// porcelain would do itself: a stat-based status and commit (go-git's
// Status hashes every file), a per-path three-way merge that understands
// notes (frontmatter key by key, bodies by a line diff3, overlapping edits
// kept as a conflict copy), a worktree update that touches only the paths
// that changed and refuses if any of them was edited meanwhile, and a
// compare-and-swap of the branch ref. Every step is ordered so a crash
// leaves either the old state or uncommitted files equal to the new one,
// which the next sync commits and converges.
//
// One sync runs at a time per repository (an flock on .git/anamnesis.lock,
// released by the kernel if the process dies); network steps are watched
// for inactivity (wire.go): they fail once no data moved for the timeout,
// however long a transfer that keeps moving takes.
package gitsync
