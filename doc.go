// Package anamnesis is cross-machine memory for Claude Code. Its Store
// ties together the note files (package note), the derived SQLite index
// (package index) and the git repository that syncs memory/ between a
// user's machines (package gitsync), and decides which notes a Claude Code
// session is shown (Inject, Recall, SaveSession: the claudecode.Memory it
// satisfies).
//
// A store home holds memory/ (portable notes, the git repository), local/
// (machine-local notes, never synced), index.db (derived, rebuildable),
// state/ (per-session state and background logs) and config.json
// (machine-local settings). The files are the source of truth: every
// Store operation that changes the index either comes from a file change
// or writes the file first, and anything in the index can be rebuilt from
// the files at any time.
//
// What the Store needs from outside it declares as interfaces filled by
// its caller: Tailnet (peers and tailscaled's state for a mesh sync), so
// neither this package nor its users link Tailscale.
package anamnesis
