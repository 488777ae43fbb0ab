// Package nativemem reads Claude Code's own auto memory: the markdown files
// Claude writes itself under <config dir>/projects/<key>/memory/ (one
// memory per file, MEMORY.md their index), or in the directory the user's
// autoMemoryDirectory setting names.
//
// It only reads. Find lists the memory directories and, for each, the cwd
// of the session transcripts beside it (projects/<key>/*.jsonl), from
// which the caller derives the project key: the <key> directory name comes
// from an absolute path and differs between machines, a normalized git
// origin does not. ParseFile accepts both front-matter shapes Claude Code
// has written (type at the top, or under metadata:) and reports a file
// whose front matter is not YAML instead of failing the whole import.
//
// Turning memories into notes (ids, types, redaction, commits) is the root
// package's ImportNative; this package knows nothing of the store.
package nativemem
