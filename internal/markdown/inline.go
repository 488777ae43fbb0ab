package markdown

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Inline content is parsed into a flat list of nodes in source order.
// Emphasis follows CommonMark's delimiter algorithm, which only ever
// pairs an opener with a later closer after removing every delimiter
// between them: so the tags it adds always nest, and a flat list renders
// well-formed HTML. Links work the same way (a bracket stack, emphasis
// inside a link settled when it closes), and a link inside a link or an
// image renders as its text alone.

type nodeKind uint8

const (
	nText nodeKind = iota
	nCode
	nSoftBreak
	nHardBreak
	nDelim
	nLinkOpen
	nLinkClose
	nAutolink
)

// Tags emphasis puts around a delimiter run's text.
const (
	tagEm byte = iota + 1
	tagStrong
	tagDel
)

// node is kept small (32 bytes): a hostile paragraph makes one per byte.
// Indexes fit in an int32 because HTML takes at most maxInput bytes.
type node struct {
	// Text, code, a link opener's target, a link closer's title, an
	// autolink's text.
	s    string
	n    int32 // a delimiter run: how many characters are left as text
	aux  int32 // a link opener: its closer; a delimiter run: 1 + its index in tags, or 0
	kind nodeKind
	// A delimiter run's character; an autolink's target is its text
	// after "http://" for 'w' and "mailto:" for 'm'.
	ch   byte
	emit bool // a link closer whose opener wrote <a>
}

// tagList is the emphasis tags around a delimiter run's text: linked
// lists in the parser's links (entries are 1 + an index, 0 ends a list),
// so a paragraph of a million pairs makes no million small slices.
type tagList struct {
	pre, preLast int32 // closed before the characters, in order
	post         int32 // opened after them
}

type tagLink struct {
	tag  byte
	next int32
}

// delim is a delimiter run on CommonMark's delimiter stack (a doubly
// linked list in source order).
type delim struct {
	node, prev, next  int32
	ch                byte
	orig3             byte // the run's length before any was used, mod 3
	canOpen, canClose bool
}

type bracket struct {
	node  int32
	image bool
}

type inlineParser struct {
	src        string
	pos        int
	textStart  int // start of the text not yet in a node, or -1
	nodes      []node
	tags       []tagList
	links      []tagLink
	delimBytes int // '*', '_' and '~' in src: no more runs, tag lists or links than that
	delims     []delim
	top        int32 // the delimiter stack's top, or -1
	brackets   []bracket
	barrier    int32 // '[' openers before this node may no longer make links

	// Backtick runs by length (their start offsets, in order), built on
	// the first backtick, and how far each list has been searched: a
	// code span's closer is found without scanning the rest of the text
	// again for every opener.
	ticks   map[int][]int
	tickCur map[int]int
}

func parseInline(src string) ([]node, []tagList, []tagLink) {
	p := &inlineParser{src: src, textStart: -1, top: -1, barrier: -1}
	// Each byte that may start a construct makes at most one node, and so
	// does each run of other bytes: sized once, a hostile paragraph's
	// million nodes are not copied over and over as the slice grows.
	// (Bare links, at h and w, take eight bytes or more; they may grow
	// it.)
	n, inText := 1, false
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '*', '_', '~':
			p.delimBytes++
			n++
			inText = false
		case '\n', '\\', '`', '[', '!', ']', '<':
			n++
			inText = false
		default:
			if !inText {
				n++
			}
			inText = true
		}
	}
	p.nodes = make([]node, 0, n)
	if p.delimBytes > 0 {
		p.delims = make([]delim, 0, min(p.delimBytes, n))
	}
	for p.pos < len(src) {
		if !p.special() {
			if p.textStart < 0 {
				p.textStart = p.pos
			}
			p.pos++
		}
	}
	p.flush()
	p.processEmphasis(-1)
	return p.nodes, p.tags, p.links
}

// special handles a construct starting at pos; false leaves the byte to
// be text.
func (p *inlineParser) special() bool {
	switch p.src[p.pos] {
	case '\n':
		p.lineBreak()
		return true
	case '\\':
		return p.backslash()
	case '`':
		p.codeSpan()
		return true
	case '*', '_', '~':
		p.delimRun()
		return true
	case '[':
		p.openBracket(1, false)
		return true
	case '!':
		if p.pos+1 < len(p.src) && p.src[p.pos+1] == '[' {
			p.openBracket(2, true)
			return true
		}
	case ']':
		return p.closeBracket()
	case '<':
		return p.autolink()
	case 'h', 'H', 'w', 'W':
		return p.bareLink()
	}
	return false
}

func (p *inlineParser) flush() { p.flushTo(p.pos) }

func (p *inlineParser) flushTo(end int) {
	if p.textStart >= 0 && p.textStart < end {
		p.nodes = append(p.nodes, node{kind: nText, s: p.src[p.textStart:end]})
	}
	p.textStart = -1
}

// literal makes n bytes at pos text.
func (p *inlineParser) literal(n int) {
	if p.textStart < 0 {
		p.textStart = p.pos
	}
	p.pos += n
}

func (p *inlineParser) add(n node) int32 {
	p.nodes = append(p.nodes, n)
	return int32(len(p.nodes) - 1)
}

// lineBreak: two or more spaces before the newline make a hard break;
// spaces around a soft one are dropped.
func (p *inlineParser) lineBreak() {
	j := p.pos
	for p.textStart >= 0 && j > p.textStart && p.src[j-1] == ' ' {
		j--
	}
	hard := p.pos-j >= 2
	p.flushTo(j)
	if hard {
		p.add(node{kind: nHardBreak})
	} else {
		p.add(node{kind: nSoftBreak})
	}
	p.pos++
	p.skipLineStart()
}

func (p *inlineParser) skipLineStart() {
	for p.pos < len(p.src) && isSpaceOrTab(p.src[p.pos]) {
		p.pos++
	}
}

func (p *inlineParser) backslash() bool {
	i := p.pos + 1
	if i >= len(p.src) {
		return false
	}
	if p.src[i] == '\n' {
		p.flush()
		p.add(node{kind: nHardBreak})
		p.pos = i + 1
		p.skipLineStart()
		return true
	}
	if isASCIIPunct(p.src[i]) {
		// The escaped character starts the next text.
		p.flush()
		p.textStart, p.pos = i, i+1
		return true
	}
	return false
}

func (p *inlineParser) codeSpan() {
	n := run(p.src[p.pos:], '`')
	end := p.findTicks(p.pos+n, n)
	if end < 0 {
		p.literal(n)
		return
	}
	code := p.src[p.pos+n : end]
	if strings.IndexByte(code, '\n') >= 0 {
		code = strings.ReplaceAll(code, "\n", " ")
	}
	if len(code) >= 2 && code[0] == ' ' && code[len(code)-1] == ' ' && strings.Trim(code, " ") != "" {
		code = code[1 : len(code)-1]
	}
	p.flush()
	p.add(node{kind: nCode, s: code})
	p.pos = end + n
}

// findTicks is the start of the first run of exactly n backticks at or
// after from, or -1.
func (p *inlineParser) findTicks(from, n int) int {
	if p.ticks == nil {
		p.ticks, p.tickCur = map[int][]int{}, map[int]int{}
		for i := 0; i < len(p.src); {
			j := strings.IndexByte(p.src[i:], '`')
			if j < 0 {
				break
			}
			i += j
			k := run(p.src[i:], '`')
			p.ticks[k] = append(p.ticks[k], i)
			i += k
		}
	}
	list, c := p.ticks[n], p.tickCur[n]
	for c < len(list) && list[c] < from {
		c++
	}
	p.tickCur[n] = c
	if c < len(list) {
		return list[c]
	}
	return -1
}

// delimRun adds a run of * _ or ~ and, if it can open or close emphasis
// by CommonMark's flanking rules, puts it on the delimiter stack. An
// underscore between two letters or digits can do neither, so
// snake_case_words stay as they are.
func (p *inlineParser) delimRun() {
	c := p.src[p.pos]
	n := run(p.src[p.pos:], c)
	if c == '~' && n != 2 {
		p.literal(n) // only ~~ strikes: notes write ~5 for "about 5"
		return
	}
	before, after := '\n', '\n'
	if p.pos > 0 {
		before, _ = utf8.DecodeLastRuneInString(p.src[:p.pos])
	}
	if p.pos+n < len(p.src) {
		after, _ = utf8.DecodeRuneInString(p.src[p.pos+n:])
	}
	canOpen, canClose := flanking(c, before, after)
	p.flush()
	i := p.add(node{kind: nDelim, ch: c, n: int32(n)})
	p.pos += n
	if canOpen || canClose {
		p.delims = append(p.delims, delim{node: i, ch: c, orig3: byte(n % 3), canOpen: canOpen, canClose: canClose, prev: p.top, next: -1})
		k := int32(len(p.delims) - 1)
		if p.top >= 0 {
			p.delims[p.top].next = k
		}
		p.top = k
	}
}

// flanking applies CommonMark's flanking rules to a run of c between
// the runes before and after it ('\n' at either end of the text): can
// it open emphasis, can it close it.
func flanking(c byte, before, after rune) (canOpen, canClose bool) {
	spaceB, punctB := unicode.IsSpace(before), isPunct(before)
	spaceA, punctA := unicode.IsSpace(after), isPunct(after)
	left := !spaceA && (!punctA || spaceB || punctB)
	right := !spaceB && (!punctB || spaceA || punctA)
	if c == '_' {
		return left && (!right || punctB), right && (!left || punctA)
	}
	return left, right
}

func (p *inlineParser) remove(k int32) {
	d := p.delims[k]
	if d.prev >= 0 {
		p.delims[d.prev].next = d.next
	}
	if d.next >= 0 {
		p.delims[d.next].prev = d.prev
	} else {
		p.top = d.prev
	}
}

func charIndex(c byte) int {
	switch c {
	case '*':
		return 0
	case '_':
		return 1
	}
	return 2
}

// processEmphasis pairs the delimiters after node bottom (CommonMark's
// "process emphasis"), then takes them off the stack. Bounds are node
// positions, which stay meaningful when delimiters are removed.
func (p *inlineParser) processEmphasis(bottom int32) {
	// openersBottom[char][closer can open][closer length % 3]: no opener
	// at or before this node suits such a closer, so later ones do not
	// look there again (this keeps the algorithm linear).
	var openersBottom [3][2][3]int32
	for i := range openersBottom {
		for j := range openersBottom[i] {
			for k := range openersBottom[i][j] {
				openersBottom[i][j][k] = bottom
			}
		}
	}
	cur := int32(-1)
	for d := p.top; d >= 0 && p.delims[d].node > bottom; d = p.delims[d].prev {
		cur = d
	}
	for cur >= 0 {
		closer := &p.delims[cur]
		if !closer.canClose {
			cur = closer.next
			continue
		}
		ci, mi := charIndex(closer.ch), closer.orig3
		oi := 0
		if closer.canOpen {
			oi = 1
		}
		limit := openersBottom[ci][oi][mi]
		o := p.opener(cur, limit)
		if o < 0 {
			openersBottom[ci][oi][mi] = closer.node - 1
			next := closer.next
			if !closer.canOpen {
				p.remove(cur)
			}
			cur = next
			continue
		}
		cur = p.pair(o, cur)
	}
	for p.top >= 0 && p.delims[p.top].node > bottom {
		p.remove(p.top)
	}
}

// opener is the nearest delimiter before closer c, and after node limit,
// that can open emphasis with it; -1 when there is none.
func (p *inlineParser) opener(c, limit int32) int32 {
	closer := &p.delims[c]
	o := closer.prev
	for ; o >= 0 && p.delims[o].node > limit; o = p.delims[o].prev {
		op := &p.delims[o]
		if op.ch != closer.ch || !op.canOpen {
			continue
		}
		// The rule of three: a run that can both open and close
		// pairs only when the lengths' sum is no multiple of 3,
		// unless both are.
		if closer.ch != '~' && (op.canClose || closer.canOpen) &&
			(op.orig3+closer.orig3)%3 == 0 && (op.orig3 != 0 || closer.orig3 != 0) {
			continue
		}
		break
	}
	if o < 0 || p.delims[o].node <= limit {
		return -1
	}
	return o
}

// pair makes opener o and closer c one emphasis (strong when both have
// two characters left, a strikethrough for ~~), taking its characters
// from both runs, and returns the delimiter to look at next: c again
// while it has characters left.
func (p *inlineParser) pair(o, c int32) int32 {
	closer := &p.delims[c]
	on, cn := &p.nodes[p.delims[o].node], &p.nodes[closer.node]
	use, tag := int32(1), tagEm
	switch {
	case closer.ch == '~':
		use, tag = 2, tagDel
	case on.n >= 2 && cn.n >= 2:
		use, tag = 2, tagStrong
	}
	on.n -= use
	cn.n -= use
	// The opener's characters go from its end and the closer's from
	// its start: the newest tags sit closest to the text.
	ot, ct := p.tagIndex(on), p.tagIndex(cn)
	p.links = append(p.links, tagLink{tag, p.tags[ot].post}, tagLink{tag, 0})
	p.tags[ot].post = int32(len(p.links) - 1)
	if last := p.tags[ct].preLast; last == 0 {
		p.tags[ct].pre = int32(len(p.links))
	} else {
		p.links[last-1].next = int32(len(p.links))
	}
	p.tags[ct].preLast = int32(len(p.links))
	// Delimiters between them can no longer pair.
	p.delims[o].next = c
	closer.prev = o
	if on.n == 0 {
		p.remove(o)
	}
	if cn.n == 0 {
		next := closer.next
		p.remove(c)
		return next
	}
	return c
}

// tagIndex is the index in tags of a delimiter run's tag lists, made on
// first use.
func (p *inlineParser) tagIndex(n *node) int {
	if p.tags == nil {
		// Each pair uses at least one character of each run.
		p.tags = make([]tagList, 0, p.delimBytes)
		p.links = make([]tagLink, 0, p.delimBytes)
	}
	if n.aux == 0 {
		p.tags = append(p.tags, tagList{})
		n.aux = int32(len(p.tags))
	}
	return int(n.aux - 1)
}

func (p *inlineParser) openBracket(width int, image bool) {
	p.flush()
	i := p.add(node{kind: nText, s: p.src[p.pos : p.pos+width]})
	p.brackets = append(p.brackets, bracket{node: i, image: image})
	p.pos += width
}

// closeBracket makes a link or image when the nearest open bracket is
// still active and an inline destination follows; otherwise the ']' is
// text.
func (p *inlineParser) closeBracket() bool {
	if len(p.brackets) == 0 {
		return false
	}
	b := p.brackets[len(p.brackets)-1]
	p.brackets = p.brackets[:len(p.brackets)-1]
	if !b.image && b.node < p.barrier {
		return false // links may not contain links
	}
	dest, title, end, ok := linkTail(p.src, p.pos+1)
	if !ok {
		return false
	}
	p.flush()
	c := p.add(node{kind: nLinkClose, s: title})
	p.nodes[b.node] = node{kind: nLinkOpen, s: dest, aux: c}
	p.processEmphasis(b.node)
	if !b.image {
		p.barrier = c
	}
	p.pos = end
	return true
}

// linkTail parses an inline link's "(destination "title")" at i.
//
// Each scan stops at the first byte that ends its construct: a
// destination at whitespace or after 32 nested parentheses, a title at its
// quote; so no byte is scanned by more than a few attempts.
func linkTail(s string, i int) (dest, title string, end int, ok bool) {
	if i >= len(s) || s[i] != '(' {
		return "", "", 0, false
	}
	j := skipSpace(s, i+1)
	if j < len(s) && s[j] == ')' {
		return "", "", j + 1, true
	}
	dest, j, ok = linkDest(s, j)
	if !ok {
		return "", "", 0, false
	}
	k := skipSpace(s, j)
	if k > j && k < len(s) && (s[k] == '"' || s[k] == '\'' || s[k] == '(') {
		title, k, ok = linkTitle(s, k)
		if !ok {
			return "", "", 0, false
		}
		k = skipSpace(s, k)
	}
	if k < len(s) && s[k] == ')' {
		return dest, title, k + 1, true
	}
	return "", "", 0, false
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
		i++
	}
	return i
}

// linkDest reads a link destination at j: <...> or bare. It returns the
// destination unescaped and the index after it.
func linkDest(s string, j int) (string, int, bool) {
	if j < len(s) && s[j] == '<' {
		return angleDest(s, j)
	}
	return bareDest(s, j)
}

// angleDest reads <...>: no '<' or new line inside, '\' escapes.
func angleDest(s string, j int) (string, int, bool) {
	for k := j + 1; k < len(s); k++ {
		switch s[k] {
		case '\\':
			if k+1 < len(s) && isASCIIPunct(s[k+1]) {
				k++
			}
		case '>':
			return unescape(s[j+1 : k]), k + 1, true
		case '<', '\n':
			return "", 0, false
		}
	}
	return "", 0, false
}

// bareDest reads a destination up to a space, a control character or a
// ')' its parentheses do not balance (nested at most 32 deep); it may
// not be empty.
func bareDest(s string, j int) (string, int, bool) {
	depth, k := 0, j
scan:
	for ; k < len(s); k++ {
		switch c := s[k]; {
		case c == '\\' && k+1 < len(s) && isASCIIPunct(s[k+1]):
			k++
		case c == '(':
			depth++
			if depth > 32 {
				return "", 0, false
			}
		case c == ')':
			if depth == 0 {
				break scan
			}
			depth--
		case c <= ' ' || c == 0x7f:
			break scan
		}
	}
	if k == j || depth != 0 {
		return "", 0, false
	}
	return unescape(s[j:k]), k, true
}

func linkTitle(s string, k int) (string, int, bool) {
	open, close := s[k], s[k]
	if open == '(' {
		close = ')'
	}
	for i := k + 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
			i++
		case c == close:
			return unescape(s[k+1 : i]), i + 1, true
		case c == '(' && open == '(':
			return "", 0, false
		}
	}
	return "", 0, false
}

// unescape drops the backslash of each backslash escape.
func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// autolink handles <scheme:...> and <user@example.com>.
func (p *inlineParser) autolink() bool {
	s, i := p.src, p.pos+1
	j := i
	for j < len(s) && j-i <= 32 && (isAlnum(s[j]) || s[j] == '+' || s[j] == '.' || s[j] == '-') {
		j++
	}
	if n := j - i; n >= 2 && n <= 32 && isLetter(s[i]) && j < len(s) && s[j] == ':' {
		if k := uriEnd(s, j+1); k > 0 {
			p.flush()
			p.add(node{kind: nAutolink, s: s[i:k]})
			p.pos = k + 1
			return true
		}
	}
	if k := emailEnd(s, i); k > 0 {
		p.flush()
		p.add(node{kind: nAutolink, s: s[i:k], ch: 'm'})
		p.pos = k + 1
		return true
	}
	return false
}

// uriEnd is the index of the '>' closing a URI whose scheme ends before
// i, or -1 at a '<', a space or a control character before it.
func uriEnd(s string, i int) int {
	for k := i; k < len(s); k++ {
		c := s[k]
		if c == '>' {
			return k
		}
		if c == '<' || c <= ' ' || c == 0x7f {
			return -1
		}
	}
	return -1
}

// emailEnd is the index of the '>' closing an e-mail address that starts
// at i, or -1.
func emailEnd(s string, i int) int {
	j := i
	for j < len(s) && (isAlnum(s[j]) || strings.IndexByte(".!#$%&'*+/=?^_`{|}~-", s[j]) >= 0) {
		j++
	}
	if j == i || j >= len(s) || s[j] != '@' {
		return -1
	}
	j++
	for {
		k := labelEnd(s, j)
		if k < 0 || k >= len(s) {
			return -1
		}
		switch s[k] {
		case '>':
			return k
		case '.':
			j = k + 1
		default:
			return -1
		}
	}
}

// labelEnd is the end of the domain label at j: 1 to 63 letters, digits
// and hyphens, not starting or ending with a hyphen; -1 when there is
// none.
func labelEnd(s string, j int) int {
	k := j
	for k < len(s) && k-j < 63 && (isAlnum(s[k]) || s[k] == '-') {
		k++
	}
	if k == j || s[j] == '-' || s[k-1] == '-' {
		return -1
	}
	return k
}

// bareLink handles GFM's extended autolinks: http://, https:// and www.
// at the start of a word, up to whitespace or another linkStop, without
// trailing punctuation or an unbalanced ')'.
func (p *inlineParser) bareLink() bool {
	s, i := p.src, p.pos
	if i > 0 {
		switch s[i-1] {
		case ' ', '\t', '\n', '*', '_', '~', '(':
		default:
			return false
		}
	}
	var host int
	switch rest := s[i:]; {
	case hasPrefixFold(rest, "https://"):
		host = i + 8
	case hasPrefixFold(rest, "http://"):
		host = i + 7
	case hasPrefixFold(rest, "www."):
		host = i + 4
	default:
		return false
	}
	end := domainEnd(s, host)
	if end < 0 {
		return false
	}
	for end < len(s) && !linkStop(s[end]) {
		end++
	}
	end = trimLinkEnd(s, i, end)
	if end <= host {
		return false
	}
	var www byte
	if host == i+4 {
		www = 'w'
	}
	p.flush()
	p.add(node{kind: nAutolink, s: s[i:end], ch: www})
	p.pos = end
	return true
}

// linkStop reports whether c ends a bare link: GFM stops only at
// whitespace and '<'; notes are full of code and brackets, so quotes,
// backticks, brackets, braces, backslashes and pipes end one too.
func linkStop(c byte) bool {
	switch c {
	case '<', '>', '`', '"', '[', ']', '{', '}', '\\', '|', 0x7f:
		return true
	}
	return c <= ' '
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// domainEnd is the end of a GFM "valid domain" at i (segments of letters,
// digits, '-' and '_' between dots, no '_' in the last two), or -1.
func domainEnd(s string, i int) int {
	j := i
	prev, last := false, false // an underscore in the segment before the last, in the last
scan:
	for ; j < len(s); j++ {
		switch c := s[j]; {
		case c == '.':
			prev, last = last, false
		case c == '_':
			last = true
		case isAlnum(c) || c == '-' || c >= utf8.RuneSelf:
		default:
			break scan
		}
	}
	if j == i || prev || last {
		return -1
	}
	return j
}

// trimLinkEnd drops what GFM leaves out of a bare link's end: trailing
// punctuation, ')' without its '(' inside the link, and a trailing
// entity-like "&name;".
func trimLinkEnd(s string, start, end int) int {
	opens := strings.Count(s[start:end], "(")
	closes := strings.Count(s[start:end], ")")
	for end > start {
		switch s[end-1] {
		case '?', '!', '.', ',', ':', '*', '_', '~', '\'', '"':
			end--
		case ')':
			if closes <= opens {
				return end
			}
			closes--
			end--
		case ';':
			k := end - 2
			for k > start && isAlnum(s[k]) {
				k--
			}
			if k < end-2 && s[k] == '&' {
				end = k
			} else {
				end--
			}
		default:
			return end
		}
	}
	return end
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isAlnum(c byte) bool { return isLetter(c) || '0' <= c && c <= '9' }

func isASCIIPunct(c byte) bool {
	return '!' <= c && c <= '/' || ':' <= c && c <= '@' || '[' <= c && c <= '`' || '{' <= c && c <= '~'
}

// isPunct is CommonMark's Unicode punctuation: categories P and S.
func isPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return isASCIIPunct(byte(r))
	}
	return unicode.IsPunct(r) || unicode.IsSymbol(r)
}

// inline renders inline content.
func (r *renderer) inline(s string) {
	w := r.b
	nodes, tags, links := parseInline(s)
	anchors := 0 // open <a> tags: at most one, links inside it are text
	for i := range nodes {
		n := &nodes[i]
		switch n.kind {
		case nText:
			escape(w, n.s)
		case nCode:
			w.WriteString("<code>")
			escape(w, n.s)
			w.WriteString("</code>")
		case nSoftBreak:
			w.WriteByte('\n')
		case nHardBreak:
			w.WriteString("<br>\n")
		case nDelim:
			writeDelim(w, n, tags, links)
		case nLinkOpen:
			if anchors == 0 && safeURL(n.s) {
				writeLinkOpen(w, n.s, nodes[n.aux].s)
				nodes[n.aux].emit = true
				anchors++
			}
		case nLinkClose:
			if n.emit {
				w.WriteString("</a>")
				anchors--
			}
		case nAutolink:
			writeAutolink(w, n, anchors == 0)
		}
	}
}

// writeDelim writes a delimiter run's characters left over from pairing,
// the tags it closes before them and those it opens after them.
func writeDelim(w *strings.Builder, n *node, tags []tagList, links []tagLink) {
	var tl tagList
	if n.aux > 0 {
		tl = tags[n.aux-1]
	}
	for l := tl.pre; l != 0; l = links[l-1].next {
		w.WriteString(closeTags[links[l-1].tag])
	}
	for k := int32(0); k < n.n; k++ {
		w.WriteByte(n.ch)
	}
	for l := tl.post; l != 0; l = links[l-1].next {
		w.WriteString(openTags[links[l-1].tag])
	}
}

// writeLinkOpen writes <a> to href (already found safe), with its title.
func writeLinkOpen(w *strings.Builder, href, title string) {
	w.WriteString(`<a href="`)
	writeHref(w, href)
	if title != "" {
		w.WriteString(`" title="`)
		escape(w, title)
	}
	w.WriteString(`">`)
}

// writeAutolink writes an autolink (a www. one gets http://, an e-mail
// address mailto:) as a link when it may be one (a safe URL, not inside
// another link), else as text.
func writeAutolink(w *strings.Builder, n *node, mayLink bool) {
	href := n.s
	switch n.ch {
	case 'w':
		href = "http://" + href
	case 'm':
		href = "mailto:" + href
	}
	if !mayLink || !safeURL(href) {
		escape(w, n.s)
		return
	}
	w.WriteString(`<a href="`)
	writeHref(w, href)
	w.WriteString(`">`)
	escape(w, n.s)
	w.WriteString("</a>")
}

// Indexed by tagEm, tagStrong, tagDel; arrays of constants, no init work.
var (
	openTags  = [...]string{"", "<em>", "<strong>", "<del>"}
	closeTags = [...]string{"", "</em>", "</strong>", "</del>"}
)
