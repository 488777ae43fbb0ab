// Package note holds the memory note record and everything about one note on
// disk: the frontmatter codec (byte-compatible with the Python anamnesis
// writer, which emits yaml.safe_dump output), ULID ids, atomic writes, and the
// walk over one tree of notes.
//
// A store has two trees, memory/ (portable, synced by git) and local/
// (machine-local). The tree a file sits in decides its scope, whatever its
// frontmatter says, so a note can never leak from local/ into a sync by a
// typo in a header. Reading is tolerant (only id, type and title are
// required, everything else has the Python tool's defaults) but strict about
// things that would make a note unsafe to index: invalid UTF-8, leftover git
// conflict markers, YAML aliases, oversized files, ids that are not id-shaped.
package note
