// Package markdown renders the markdown of note bodies to HTML for the web
// UI (HTML), or to the plain text a reader sees (Text, for snippets): a
// practical subset of CommonMark and GitHub Flavored Markdown,
// written for two constraints.
//
// Start-up: every process of the binary, the Claude Code hooks included,
// pays each linked package's initialisers before main. This package does
// no work at init (no package-level regexps, maps or tables built at
// start-up): its parsers are hand-written scanners over the input. It
// replaced goldmark, whose initialisers cost about 5 ms in every process.
//
// Safety: notes arrive from other machines, so the input is untrusted.
// Every byte of text is HTML-escaped; raw HTML is shown as text, never
// passed through; links, autolinks and images keep their target only for
// http, https and mailto or a target without a scheme (a path, a
// fragment), else they render as their text alone; images render as a
// link to their source (never an <img>: no remote loads); and the output
// is always well-formed, every tag closed in order, whatever the input.
// Invalid UTF-8 and NUL become U+FFFD. Nesting of block quotes and lists
// stops at 32 levels (deeper markers are text), and every construct is
// parsed in time linear in its input (up to small constants), so a
// hostile note cannot stall the page.
//
// Supported: ATX and setext headings, paragraphs with soft and hard line
// breaks, fenced (``` and ~~~, with a language class) and indented code
// blocks, thematic breaks, block quotes, bullet and ordered lists (nested,
// tight and loose, GFM task items as disabled checkboxes), GFM pipe tables
// (alignment as the align attribute: the page's Content-Security-Policy
// refuses inline styles), code spans, emphasis, strong emphasis and ~~strike~~
// by CommonMark's delimiter rules (so snake_case_words stay literal),
// inline links and images with titles, <autolinks> (URLs and e-mail
// addresses), GFM's bare http://, https:// and www. links, and backslash
// escapes.
//
// Not supported: raw HTML (escaped instead), HTML entities (left as
// text: "&amp;" shows as typed), reference-style links and their
// definitions, GFM's bare e-mail links and footnotes, single-tilde
// strikethrough (notes write "~5 ms" for "about").
package markdown
