// Package webui is `anamnesis ui`: a local web interface to one store,
// served from the binary with its templates, stylesheet and script
// embedded (no build step, no CDN, works offline).
//
// Pages: the notes (newest first, filters, the Store's own search,
// keyset paging), one note (rendered markdown, frontmatter, its git
// history with diffs, what it supersedes and what supersedes it), edit,
// write and supersede, conflicts (each copy beside its note; keep one or
// merge by hand), and the fleet (machines seen in the history, the
// remote, tailnet peers, the index and doctor's findings).
//
// It takes the root package's [*anamnesis.Store] itself, not an
// interface: the UI's pages between them call two dozen of its methods
// and use its types throughout, nothing else provides them, and the tests
// run the pages against real stores (real SQLite files, real git
// histories), never a fake. An interface here would mirror the concrete
// type and only add a place to update; per-page interfaces would each be
// satisfied by that one type and composed back into the whole for
// [Server]. When a second implementation or a fake has a reason to exist,
// declare the small interface it needs here, named for the pages it
// serves. The package knows nothing of flags or processes:
// cmd/anamnesis/ui.go listens, prints the URL and starts background syncs
// through [Options.AfterWrite].
//
// Security, because notes arrive from other machines and the server runs
// with the user's rights: it is meant for a listener on 127.0.0.1 only;
// every request must carry a Host header naming the loopback address or
// localhost with the server's port (a DNS-rebound name is refused), and
// the random token from the printed URL, which is traded for an HttpOnly,
// SameSite=Strict cookie; a request without it gets 401 and no note text.
// Every POST carries a CSRF token. No CORS header is ever sent. Note text
// is escaped by html/template, and markdown is rendered by
// internal/markdown, which escapes all text (raw HTML shows as text),
// keeps only http, https, mailto and relative link targets and never
// emits an image, under a Content-Security-Policy that allows only the
// page's own script and stylesheet.
package webui
