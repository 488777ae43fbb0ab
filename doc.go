// Package anamnesis is cross-machine memory for Claude Code. Its Store ties
// together the note files (package note), the derived SQLite index
// (package index) and, in later layers, the git repository that syncs
// memory/ between machines.
//
// A store home holds memory/ (portable notes, the git repository), local/
// (machine-local notes, never synced), index.db (derived, rebuildable) and
// config.json (machine-local settings). The files are the source of truth:
// every Store operation that changes the index either comes from a file
// change or writes the file first, and anything in the index can be
// rebuilt from the files at any time.
package anamnesis
