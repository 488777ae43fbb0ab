// Package nativemem reads Claude Code's own auto memory: the markdown files
// Claude writes itself under <config dir>/projects/<key>/memory/ (one
// memory per file, MEMORY.md their index), or in the directory the user's
// autoMemoryDirectory setting names.
//
// Reading: Find lists the memory directories and, for each, the cwd
// of the session transcripts beside it (projects/<key>/*.jsonl), from
// which the caller derives the project key: the <key> directory name comes
// from an absolute path and differs between machines, a normalized git
// origin does not. ParseFile accepts both front-matter shapes Claude Code
// has written (type at the top, or under metadata:) and reports a file
// whose front matter is not YAML instead of failing the whole import.
//
// Writing: [WriteExport] writes memories of other machines into a memory
// directory in the same format (a topic file each, marked as ours, and a
// marked section of MEMORY.md within Claude Code's limits), and never
// over a file Claude wrote.
//
// Turning memories into notes (ids, types, redaction, commits) is the root
// package's ImportNative, and choosing which notes to export its
// ExportNative; this package knows nothing of the store.
package nativemem
