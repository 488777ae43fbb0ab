package markdown

import "strings"

// Text is the text a reader sees in src's markdown, as plain text: what
// HTML writes with its inline tags dropped, every other tag (blocks,
// cells, line breaks) a space, and its escapes undone. It is for
// snippets; the caller escapes it again for a page.
func Text(src string) string {
	h := HTML(src)
	var b strings.Builder
	for len(h) > 0 {
		i := strings.IndexAny(h, "<&")
		if i < 0 {
			b.WriteString(h)
			break
		}
		b.WriteString(h[:i])
		h = h[i:]
		if h[0] == '&' {
			n := strings.IndexByte(h, ';')
			if n < 0 {
				b.WriteString(h)
				break
			}
			switch h[:n+1] {
			case "&amp;":
				b.WriteByte('&')
			case "&lt;":
				b.WriteByte('<')
			case "&gt;":
				b.WriteByte('>')
			case "&quot;", "&#34;":
				b.WriteByte('"')
			case "&#39;":
				b.WriteByte('\'')
			default:
				b.WriteString(h[:n+1])
			}
			h = h[n+1:]
			continue
		}
		end := strings.IndexByte(h, '>')
		if end < 0 {
			break
		}
		name := strings.TrimPrefix(h[1:end], "/")
		if sp := strings.IndexAny(name, " /"); sp >= 0 {
			name = name[:sp]
		}
		switch name {
		case "strong", "em", "del", "code", "a":
		default:
			b.WriteByte(' ')
		}
		h = h[end+1:]
	}
	return b.String()
}
