package markdown

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// HTML renders markdown source to an HTML fragment that is safe to insert
// into a page as is (see the package comment).
func HTML(src string) string {
	if len(src) > maxInput {
		// Not parsed: the parsers index nodes with int32.
		return "<pre><code>" + escapeString(src) + "</code></pre>\n"
	}
	src = normalize(src)
	var b strings.Builder
	b.Grow(len(src) + len(src)/4 + 16)
	r := renderer{b: &b, padBudget: len(src)/2 + 1024}
	r.block(parseBlocks(src), false)
	return b.String()
}

// maxDepth is how deeply block quotes and lists may nest; a marker deeper
// than that is text. It bounds the renderer's recursion and the work done
// for each line.
const maxDepth = 32

// maxInput is the longest source HTML parses (1 GiB; far beyond any
// note): larger input is shown as preformatted text.
const maxInput = 1 << 30

// maxColumns is the widest table accepted: wider header rows are text.
const maxColumns = 128

// normalize turns CR LF and lone CR into LF, and NUL and invalid UTF-8
// into U+FFFD, so the parsers deal with one kind of line end and the
// output is valid UTF-8.
func normalize(s string) string {
	if strings.IndexByte(s, '\r') < 0 && strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\r':
			b.WriteByte('\n')
			i++
			if i < len(s) && s[i] == '\n' {
				i++
			}
		case c == 0:
			b.WriteString("\uFFFD")
			i++
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteString("\uFFFD")
			} else {
				b.WriteString(s[i : i+size])
			}
			i += size
		}
	}
	return b.String()
}

type kind uint8

const (
	kDocument kind = iota
	kQuote
	kList
	kItem
	kParagraph
	kHeading
	kThematic
	kFenced
	kIndented
	kTable
)

// block is a node of the block tree. The parser follows CommonMark's
// two-phase strategy: lines are fed to a tree of open blocks (containers
// matched from the root down, then new blocks started), and inline
// content is parsed once the tree is complete.
type block struct {
	kind       kind
	parent     *block
	children   []*block
	open       bool
	start, end int // first and last source line, for tight and loose lists
	depth      int // block quotes and lists around it (itself included)

	lines []string // paragraph and heading text, code lines, table rows

	// Lists and items.
	ordered bool
	marker  byte // bullet character, or '.' or ')' after an ordered number
	first   int  // an ordered list's first number
	tight   bool
	offset  int // an item's marker column, relative to its container
	padding int // marker width plus the spaces after it

	level int // heading level

	// Fenced code.
	fenceChar   byte
	fenceLen    int
	fenceIndent int
	info        string

	// Tables.
	header []string
	aligns []byte // 0, 'l', 'c' or 'r' per column
}

func (b *block) lastChild() *block {
	if len(b.children) == 0 {
		return nil
	}
	return b.children[len(b.children)-1]
}

// parser holds the block phase's state for the current line; the names
// follow the CommonMark reference implementation's.
type parser struct {
	doc, tip    *block
	oldtip      *block
	lastMatched *block
	allClosed   bool
	lineNo      int

	line            string
	offset, column  int
	partialTab      bool // the tab at offset is partly consumed
	nextNonspace    int
	nextNonspaceCol int
	indent          int
	blank, indented bool
}

func parseBlocks(src string) *block {
	p := &parser{doc: &block{kind: kDocument, open: true, start: 1}}
	p.tip = p.doc
	for len(src) > 0 {
		ln := src
		if i := strings.IndexByte(src, '\n'); i >= 0 {
			ln, src = src[:i], src[i+1:]
		} else {
			src = ""
		}
		p.lineNo++
		p.incorporate(ln)
	}
	for p.tip != nil {
		p.finalize(p.tip, p.lineNo)
	}
	return p.doc
}

func isSpaceOrTab(c byte) bool { return c == ' ' || c == '\t' }

// peek is the byte at i, or 0 past the end (NUL never reaches the
// parser: normalize replaced it).
func (p *parser) peek(i int) byte {
	if i < len(p.line) {
		return p.line[i]
	}
	return 0
}

func (p *parser) findNextNonspace() {
	i, cols := p.offset, p.column
	for i < len(p.line) {
		c := p.line[i]
		if c == ' ' {
			i++
			cols++
		} else if c == '\t' {
			i++
			cols += 4 - cols%4
		} else {
			break
		}
	}
	p.blank = i >= len(p.line)
	p.nextNonspace, p.nextNonspaceCol = i, cols
	p.indent = cols - p.column
	p.indented = p.indent >= 4
}

func (p *parser) advanceNextNonspace() {
	p.offset, p.column, p.partialTab = p.nextNonspace, p.nextNonspaceCol, false
}

// advanceOffset moves count bytes, or count columns when columns is set
// (a tab then counts as the columns to the next tab stop, and may be
// consumed in part).
func (p *parser) advanceOffset(count int, columns bool) {
	for count > 0 && p.offset < len(p.line) {
		if p.line[p.offset] == '\t' {
			toTab := 4 - p.column%4
			if columns {
				p.partialTab = toTab > count
				adv := min(toTab, count)
				p.column += adv
				if !p.partialTab {
					p.offset++
				}
				count -= adv
			} else {
				p.partialTab = false
				p.column += toTab
				p.offset++
				count--
			}
		} else {
			p.partialTab = false
			p.offset++
			p.column++
			count--
		}
	}
}

// rest is the line from the current position, a partly consumed tab
// turned into the spaces left of it.
func (p *parser) rest() string {
	if p.offset >= len(p.line) {
		return ""
	}
	if p.partialTab {
		return strings.Repeat(" ", 4-p.column%4) + p.line[p.offset+1:]
	}
	return p.line[p.offset:]
}

// incorporate feeds one line to the tree of open blocks.
func (p *parser) incorporate(ln string) {
	p.line, p.offset, p.column, p.partialTab = ln, 0, 0, false
	p.oldtip = p.tip
	container, done := p.matchOpen()
	if done {
		return
	}
	p.allClosed = container == p.oldtip
	p.lastMatched = container
	if container, done = p.openNew(container); done {
		return
	}
	p.addText(container)
}

// matchOpen finds the deepest open block the line continues, consuming
// each one's prefix (a quote's ">", an item's indent); done says the line
// was used up (a closing fence).
func (p *parser) matchOpen() (container *block, done bool) {
	container = p.doc
	for {
		c := container.lastChild()
		if c == nil || !c.open {
			return container, false
		}
		p.findNextNonspace()
		switch p.continues(c) {
		case lineDone:
			return container, true
		case contFailed:
			return container, false
		}
		container = c
	}
}

// openNew starts the new blocks the line opens inside container (none
// inside code, whose lines are text) and returns the innermost; done
// says the line was used up.
func (p *parser) openNew(container *block) (*block, bool) {
	for container.kind != kFenced && container.kind != kIndented {
		p.findNextNonspace()
		r := p.startBlock(container)
		if r == startNone {
			p.advanceNextNonspace()
			break
		}
		if r == lineDone {
			return container, true
		}
		container = p.tip
		if r == startLeaf {
			break
		}
	}
	return container, false
}

// addText adds what is left of the line as text: a lazy continuation of
// an open paragraph, a line of the leaf it belongs to, or a new
// paragraph.
func (p *parser) addText(container *block) {
	if !p.allClosed && !p.blank && p.tip.kind == kParagraph {
		// A lazy continuation line.
		p.addLine()
		return
	}
	p.closeUnmatched()
	switch container.kind {
	case kParagraph, kFenced, kIndented, kTable:
		p.addLine()
	default:
		if !p.blank && p.offset < len(p.line) {
			p.advanceNextNonspace()
			p.addChild(kParagraph)
			p.addLine()
		}
	}
}

// Results of continues and startBlock.
const (
	contMatched    = iota // continues: the block goes on
	contFailed            // continues: it does not
	lineDone              // the line is used up
	startNone             // startBlock: nothing starts here
	startContainer        // startBlock: a container started
	startLeaf             // startBlock: a leaf started
)

// continues says whether the line continues open block c, consuming its
// prefix.
func (p *parser) continues(c *block) int {
	switch c.kind {
	case kQuote:
		return p.continueQuote()
	case kList:
		return contMatched
	case kItem:
		return p.continueItem(c)
	case kFenced:
		return p.continueFenced(c)
	case kIndented:
		return p.continueIndented()
	case kParagraph, kTable:
		if p.blank {
			return contFailed
		}
		return contMatched
	}
	return contFailed // headings and thematic breaks are one line each
}

// continueQuote: a quote goes on at a ">" (and one space after it).
func (p *parser) continueQuote() int {
	if p.indented || p.peek(p.nextNonspace) != '>' {
		return contFailed
	}
	p.advanceNextNonspace()
	p.advanceOffset(1, false)
	if isSpaceOrTab(p.peek(p.offset)) {
		p.advanceOffset(1, true)
	}
	return contMatched
}

// continueItem: an item goes on at a blank line (unless it has no
// content yet) or a line indented to its content.
func (p *parser) continueItem(c *block) int {
	if p.blank {
		if len(c.children) == 0 {
			return contFailed // an item may begin with one blank line, no more
		}
		p.advanceNextNonspace()
		return contMatched
	}
	if p.indent >= c.offset+c.padding {
		p.advanceOffset(c.offset+c.padding, true)
		return contMatched
	}
	return contFailed
}

// continueFenced: fenced code goes on until its closing fence (which
// ends it and uses up the line); each line loses up to the opening
// fence's indent.
func (p *parser) continueFenced(c *block) int {
	if p.indent <= 3 && p.peek(p.nextNonspace) == c.fenceChar {
		s := p.line[p.nextNonspace:]
		n := run(s, c.fenceChar)
		if n >= c.fenceLen && strings.TrimLeft(s[n:], " \t") == "" {
			p.finalize(c, p.lineNo)
			return lineDone
		}
	}
	for i := c.fenceIndent; i > 0 && isSpaceOrTab(p.peek(p.offset)); i-- {
		p.advanceOffset(1, true)
	}
	return contMatched
}

// continueIndented: indented code goes on at a line indented by four, or
// a blank one.
func (p *parser) continueIndented() int {
	if p.indent >= 4 {
		p.advanceOffset(4, true)
		return contMatched
	}
	if p.blank {
		p.advanceNextNonspace()
		return contMatched
	}
	return contFailed
}

// run is how many times c repeats at the start of s.
func run(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// startBlock starts the block the line opens at its first non-space
// inside container c, if any.
func (p *parser) startBlock(c *block) int {
	if p.indented {
		return p.startIndented()
	}
	s := p.line[p.nextNonspace:]
	switch ch := p.peek(p.nextNonspace); ch {
	case '>':
		return p.startQuote(c)
	case '#':
		if r := p.startATXHeading(s); r != startNone {
			return r
		}
	case '`', '~':
		if r := p.startFence(s, ch); r != startNone {
			return r
		}
	}
	if c.kind == kParagraph && (p.startTable(c, s) || p.setext(c, s)) {
		return lineDone
	}
	if thematic(s) {
		p.closeUnmatched()
		p.addChild(kThematic)
		p.offset = len(p.line)
		return startLeaf
	}
	if p.startItem(c, s) {
		return startContainer
	}
	return startNone
}

// startIndented: a line indented by four starts indented code, except
// in a paragraph (where it continues it) and when blank.
func (p *parser) startIndented() int {
	if p.tip.kind == kParagraph || p.blank {
		return startNone
	}
	p.advanceOffset(4, true)
	p.closeUnmatched()
	p.addChild(kIndented)
	return startLeaf
}

// startQuote starts a block quote at ">", unless quotes and lists are
// maxDepth deep already.
func (p *parser) startQuote(c *block) int {
	if c.depth >= maxDepth {
		return startNone
	}
	p.advanceNextNonspace()
	p.advanceOffset(1, false)
	if isSpaceOrTab(p.peek(p.offset)) {
		p.advanceOffset(1, true)
	}
	p.closeUnmatched()
	p.addChild(kQuote)
	return startContainer
}

// startATXHeading starts a heading at one to six '#' followed by a space
// or the line's end.
func (p *parser) startATXHeading(s string) int {
	n := run(s, '#')
	if n > 6 || n < len(s) && !isSpaceOrTab(s[n]) {
		return startNone
	}
	p.closeUnmatched()
	h := p.addChild(kHeading)
	h.level = n
	h.lines = []string{headingText(s[n:])}
	p.offset = len(p.line)
	return startLeaf
}

// startFence starts fenced code at three or more '`' or '~' (a backtick
// fence's info string may hold no backtick).
func (p *parser) startFence(s string, ch byte) int {
	n := run(s, ch)
	if n < 3 {
		return startNone
	}
	info := strings.Trim(s[n:], " \t")
	if ch == '`' && strings.IndexByte(info, '`') >= 0 {
		return startNone
	}
	indent := p.indent
	p.closeUnmatched()
	f := p.addChild(kFenced)
	f.fenceChar, f.fenceLen, f.fenceIndent, f.info = ch, n, indent, info
	return lineDone // the opening fence is no line of the code
}

// setext turns paragraph para into a heading when s is a setext
// underline: a run of '=' (level 1) or '-' (level 2) alone on the line.
func (p *parser) setext(para *block, s string) bool {
	ch := p.peek(p.nextNonspace)
	if ch != '=' && ch != '-' {
		return false
	}
	if n := run(s, ch); strings.TrimRight(s[n:], " \t") != "" {
		return false
	}
	para.kind = kHeading
	para.level = 1
	if ch == '-' {
		para.level = 2
	}
	para.lines = []string{strings.TrimRight(strings.Join(para.lines, "\n"), " \t")}
	p.finalize(para, p.lineNo)
	return true
}

// headingText is an ATX heading's content: s without its surrounding
// spaces and its closing run of '#'.
func headingText(s string) string {
	s = strings.Trim(s, " \t")
	j := len(s)
	for j > 0 && s[j-1] == '#' {
		j--
	}
	if j == 0 {
		return ""
	}
	if j < len(s) && isSpaceOrTab(s[j-1]) {
		s = strings.TrimRight(s[:j], " \t")
	}
	return s
}

// thematic reports whether s (a line from its first non-space) is a
// thematic break: three or more of one of - * _, and spaces or tabs.
func thematic(s string) bool {
	if s == "" || s[0] != '-' && s[0] != '*' && s[0] != '_' {
		return false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case s[0]:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

// startItem starts a list item (and its list, if need be) at the current
// position, as CommonMark's parseListMarker does.
func (p *parser) startItem(c *block, s string) bool {
	m, ok := listMarker(s, c.kind == kParagraph)
	if !ok {
		return false
	}
	newList := !(c.kind == kList && c.ordered == m.ordered && c.marker == m.marker)
	if newList && c.depth >= maxDepth {
		return false
	}
	offset := p.indent
	p.advanceNextNonspace()
	p.advanceOffset(m.width, true)
	padding := p.itemPadding(m.width)
	p.closeUnmatched()
	if newList {
		l := p.addChild(kList)
		l.ordered, l.marker, l.first = m.ordered, m.marker, m.first
	}
	it := p.addChild(kItem)
	it.offset, it.padding = offset, padding
	return true
}

// listMark is a list item's marker.
type listMark struct {
	ordered bool
	marker  byte // the bullet, or '.' or ')' after the number
	width   int  // in bytes, the number included
	first   int  // an ordered item's number
}

// listMarker reads the list marker s starts with: a bullet (- * +) or a
// number (orderedMarker), followed by a space, a tab or the line's end.
// In a paragraph (interrupting it) the item may not be empty and an
// ordered one must start at 1.
func listMarker(s string, inParagraph bool) (listMark, bool) {
	var m listMark
	ok := true
	switch {
	case s == "":
		return m, false
	case s[0] == '-' || s[0] == '*' || s[0] == '+':
		m.marker, m.width = s[0], 1
	default:
		m, ok = orderedMarker(s)
	}
	if !ok || m.width < len(s) && !isSpaceOrTab(s[m.width]) {
		return m, false
	}
	if inParagraph && (m.ordered && m.first != 1 || strings.Trim(s[m.width:], " \t") == "") {
		return m, false // only "1." and an item with content may interrupt a paragraph
	}
	return m, true
}

// orderedMarker reads an ordered item's marker: up to nine digits and
// '.' or ')'.
func orderedMarker(s string) (listMark, bool) {
	n := 0
	for n < len(s) && n < 10 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n == 0 || n > 9 || n >= len(s) || s[n] != '.' && s[n] != ')' {
		return listMark{}, false
	}
	first, _ := strconv.Atoi(s[:n])
	return listMark{ordered: true, marker: s[n], width: n + 1, first: first}, true
}

// itemPadding consumes the spaces after a marker of width n and returns
// the item's padding: the marker and those spaces, or the marker and one
// space when the content is indented by five or more (then code inside
// the item) or the item starts blank.
func (p *parser) itemPadding(n int) int {
	startCol, startOffset := p.column, p.offset
	for {
		p.advanceOffset(1, true)
		if p.column-startCol >= 5 || !isSpaceOrTab(p.peek(p.offset)) {
			break
		}
	}
	spaces := p.column - startCol
	if spaces < 5 && spaces >= 1 && p.offset < len(p.line) {
		return n + spaces
	}
	p.column, p.offset, p.partialTab = startCol, startOffset, false
	if isSpaceOrTab(p.peek(p.offset)) {
		p.advanceOffset(1, true)
	}
	return n + 1
}

// startTable turns the paragraph's last line into a table's header row
// when s is a delimiter row with as many cells.
func (p *parser) startTable(para *block, s string) bool {
	if strings.IndexByte(s, '|') < 0 || len(para.lines) == 0 {
		return false
	}
	delims := splitCells(s, maxColumns+1)
	if len(delims) > maxColumns {
		return false
	}
	aligns := make([]byte, len(delims))
	for i, d := range delims {
		left, right := strings.HasPrefix(d, ":"), strings.HasSuffix(d, ":")
		d = strings.TrimSuffix(strings.TrimPrefix(d, ":"), ":")
		if d == "" || run(d, '-') != len(d) {
			return false
		}
		switch {
		case left && right:
			aligns[i] = 'c'
		case left:
			aligns[i] = 'l'
		case right:
			aligns[i] = 'r'
		}
	}
	header := splitCells(para.lines[len(para.lines)-1], len(delims)+1)
	if len(header) != len(delims) {
		return false
	}
	t := para
	if len(para.lines) > 1 {
		para.lines = para.lines[:len(para.lines)-1]
		p.finalize(para, p.lineNo-2)
		t = p.addChild(kTable)
		t.start = p.lineNo - 1
	} else {
		t.kind, t.lines = kTable, nil
	}
	t.header, t.aligns = header, aligns
	return true
}

// splitCells splits a table row at its unescaped pipes, leaving out a
// leading and a trailing one; "\|" becomes "|" (inside code spans too, as
// in GFM). Cells are trimmed; past max cells the rest is dropped.
func splitCells(s string, max int) []string {
	s = strings.Trim(s, " \t")
	s = strings.TrimPrefix(s, "|")
	if strings.HasSuffix(s, "|") && !escapedAt(s, len(s)-1) {
		s = s[:len(s)-1]
	}
	var cells []string
	var cell strings.Builder
	from := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) && s[i+1] == '|' {
				cell.WriteString(s[from:i])
				from = i + 1 // keep the pipe, drop the backslash
			}
			i++
		case '|':
			cell.WriteString(s[from:i])
			cells = append(cells, strings.Trim(cell.String(), " \t"))
			if len(cells) == max {
				return cells
			}
			cell.Reset()
			from = i + 1
		}
	}
	if from > len(s) {
		from = len(s)
	}
	cell.WriteString(s[from:])
	return append(cells, strings.Trim(cell.String(), " \t"))
}

// escapedAt reports whether s[i] follows an odd number of backslashes.
func escapedAt(s string, i int) bool {
	n := 0
	for i > 0 && s[i-1] == '\\' {
		n++
		i--
	}
	return n%2 == 1
}

func (p *parser) closeUnmatched() {
	if p.allClosed {
		return
	}
	for p.oldtip != p.lastMatched {
		parent := p.oldtip.parent
		p.finalize(p.oldtip, p.lineNo-1)
		p.oldtip = parent
	}
	p.allClosed = true
}

func canContain(parent, child kind) bool {
	switch parent {
	case kDocument, kQuote, kItem:
		return child != kItem
	case kList:
		return child == kItem
	}
	return false
}

func (p *parser) addChild(k kind) *block {
	for p.tip.parent != nil && !canContain(p.tip.kind, k) {
		p.finalize(p.tip, p.lineNo-1)
	}
	b := &block{kind: k, parent: p.tip, open: true, start: p.lineNo, depth: p.tip.depth}
	if k == kQuote || k == kList {
		b.depth++
	}
	p.tip.children = append(p.tip.children, b)
	p.tip = b
	return b
}

func (p *parser) addLine() {
	s := p.rest()
	switch p.tip.kind {
	case kParagraph, kTable:
		s = strings.TrimLeft(s, " \t")
	}
	p.tip.lines = append(p.tip.lines, s)
}

func (p *parser) finalize(b *block, line int) {
	b.open = false
	b.end = line
	switch b.kind {
	case kItem:
		if last := b.lastChild(); last != nil {
			b.end = last.end
		} else {
			b.end = b.start
		}
	case kList:
		// Loose when a blank line separates two items, or two blocks
		// directly inside an item.
		b.tight = true
		for i, it := range b.children {
			if i+1 < len(b.children) && it.end != b.children[i+1].start-1 {
				b.tight = false
			}
			for j, sub := range it.children {
				if j+1 < len(it.children) && sub.end != it.children[j+1].start-1 {
					b.tight = false
				}
			}
		}
		if last := b.lastChild(); last != nil {
			b.end = last.end
		}
	case kIndented:
		for len(b.lines) > 0 && strings.Trim(b.lines[len(b.lines)-1], " \t") == "" {
			b.lines = b.lines[:len(b.lines)-1]
		}
	}
	p.tip = b.parent
}

// renderer writes the block tree as HTML.
type renderer struct {
	b         *strings.Builder
	padBudget int // empty cells a table may still add to short rows
}

// cr starts a new line unless the output is at the start of one.
func (r *renderer) cr() {
	if n := r.b.Len(); n > 0 && r.b.String()[n-1] != '\n' {
		r.b.WriteByte('\n')
	}
}

func (r *renderer) block(b *block, tight bool) {
	w := r.b
	switch b.kind {
	case kDocument, kQuote:
		if b.kind == kQuote {
			r.cr()
			w.WriteString("<blockquote>\n")
		}
		for _, c := range b.children {
			r.block(c, false)
		}
		if b.kind == kQuote {
			r.cr()
			w.WriteString("</blockquote>\n")
		}
	case kParagraph:
		r.paragraph(paragraphText(b.lines), tight, "")
	case kHeading:
		r.cr()
		h := strconv.Itoa(b.level)
		w.WriteString("<h" + h + ">")
		r.inline(b.lines[0])
		w.WriteString("</h" + h + ">\n")
	case kThematic:
		r.cr()
		w.WriteString("<hr>\n")
	case kFenced, kIndented:
		r.code(b)
	case kList:
		r.list(b)
	case kTable:
		r.table(b)
	}
}

// code writes fenced or indented code, its language as the class.
func (r *renderer) code(b *block) {
	w := r.b
	r.cr()
	w.WriteString("<pre><code")
	if lang := language(b.info); lang != "" {
		w.WriteString(` class="language-`)
		escape(w, lang)
		w.WriteString(`"`)
	}
	w.WriteString(">")
	for _, l := range b.lines {
		escape(w, l)
		w.WriteByte('\n')
	}
	w.WriteString("</code></pre>\n")
}

// list writes a list and its items.
func (r *renderer) list(b *block) {
	w := r.b
	r.cr()
	tag := "ul"
	if b.ordered {
		tag = "ol"
		if b.first != 1 {
			w.WriteString(`<ol start="` + strconv.Itoa(b.first) + `">` + "\n")
		} else {
			w.WriteString("<ol>\n")
		}
	} else {
		w.WriteString("<ul>\n")
	}
	for _, it := range b.children {
		r.item(it, b.tight)
	}
	w.WriteString("</" + tag + ">\n")
}

func (r *renderer) item(it *block, tight bool) {
	w := r.b
	children := it.children
	var checked byte
	var rest string
	if len(children) > 0 && children[0].kind == kParagraph && strings.HasPrefix(children[0].lines[0], "[") {
		checked, rest = taskMarker(paragraphText(children[0].lines))
	}
	if checked == 0 {
		w.WriteString("<li>")
	} else {
		w.WriteString(`<li class="task">`)
		box := `<input type="checkbox" disabled> `
		if checked == 'x' {
			box = `<input type="checkbox" checked disabled> `
		}
		r.paragraph(rest, tight, box)
		children = children[1:]
	}
	for _, c := range children {
		r.block(c, tight)
	}
	w.WriteString("</li>\n")
}

// taskMarker finds a GFM task item's "[ ] " or "[x] " at the start of its
// first paragraph: it returns ' ' or 'x' (0 when there is none) and the
// text after it.
func taskMarker(s string) (byte, string) {
	if len(s) < 4 || s[0] != '[' || s[2] != ']' || !isSpaceOrTab(s[3]) {
		return 0, ""
	}
	rest := strings.TrimLeft(s[4:], " \t")
	if rest == "" {
		return 0, ""
	}
	switch s[1] {
	case ' ':
		return ' ', rest
	case 'x', 'X':
		return 'x', rest
	}
	return 0, ""
}

// paragraph writes a paragraph's text (with prefix, trusted HTML, before
// it); a tight list's paragraphs have no <p>.
func (r *renderer) paragraph(text string, tight bool, prefix string) {
	if tight {
		r.b.WriteString(prefix)
		r.inline(text)
		return
	}
	r.cr()
	r.b.WriteString("<p>" + prefix)
	r.inline(text)
	r.b.WriteString("</p>\n")
}

// paragraphText joins a paragraph's lines (their leading spaces already
// gone) and drops its final spaces.
func paragraphText(lines []string) string {
	if len(lines) == 1 {
		return strings.TrimRight(lines[0], " \t")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), " \t")
}

// language is the first word of a fenced block's info string, with its
// backslash escapes resolved.
func language(info string) string {
	if i := strings.IndexAny(info, " \t"); i >= 0 {
		info = info[:i]
	}
	return unescape(info)
}

func (r *renderer) table(t *block) {
	w := r.b
	r.cr()
	w.WriteString("<table>\n<thead>\n")
	r.row(t.header, t.aligns, "th")
	w.WriteString("</thead>\n")
	if len(t.lines) > 0 {
		w.WriteString("<tbody>\n")
		for _, l := range t.lines {
			r.row(splitCells(l, len(t.aligns)), t.aligns, "td")
		}
		w.WriteString("</tbody>\n")
	}
	w.WriteString("</table>\n")
}

// row writes a table row with as many cells as the header has: extra
// cells are dropped, missing ones added empty while padBudget lasts (so a
// wide header over many one-cell rows cannot make the output grow with
// the square of the input).
func (r *renderer) row(cells []string, aligns []byte, tag string) {
	w := r.b
	w.WriteString("<tr>\n")
	for i, a := range aligns {
		if i >= len(cells) {
			if r.padBudget <= 0 {
				break
			}
			r.padBudget--
		}
		w.WriteString("<" + tag)
		switch a {
		case 'l':
			w.WriteString(` align="left"`)
		case 'c':
			w.WriteString(` align="center"`)
		case 'r':
			w.WriteString(` align="right"`)
		}
		w.WriteString(">")
		if i < len(cells) {
			r.inline(cells[i])
		}
		w.WriteString("</" + tag + ">\n")
	}
	w.WriteString("</tr>\n")
}

// escape writes s with the five characters that matter in HTML text and
// attribute values escaped.
func escape(w *strings.Builder, s string) {
	from := 0
	for i := 0; i < len(s); i++ {
		var rep string
		switch s[i] {
		case '&':
			rep = "&amp;"
		case '<':
			rep = "&lt;"
		case '>':
			rep = "&gt;"
		case '"':
			rep = "&quot;"
		case '\'':
			rep = "&#39;"
		default:
			continue
		}
		w.WriteString(s[from:i])
		w.WriteString(rep)
		from = i + 1
	}
	w.WriteString(s[from:])
}

func escapeString(s string) string {
	var b strings.Builder
	escape(&b, strings.ToValidUTF8(s, "\uFFFD"))
	return b.String()
}

// writeHref writes a link target as an attribute value: bytes that do not
// belong in a URL percent-encoded (as CommonMark renderers do), & and '
// escaped for HTML.
func writeHref(w *strings.Builder, u string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(u); i++ {
		switch c := u[i]; {
		case c == '&':
			w.WriteString("&amp;")
		case c == '\'':
			w.WriteString("&#39;")
		case c <= ' ' || c >= 0x7f || c == '"' || c == '<' || c == '>' || c == '\\' ||
			c == '^' || c == '`' || c == '{' || c == '|' || c == '}':
			w.WriteByte('%')
			w.WriteByte(hex[c>>4])
			w.WriteByte(hex[c&15])
		default:
			w.WriteByte(c)
		}
	}
}

// safeURL reports whether a link may point at u: its scheme is http,
// https or mailto, or it has none (a relative path or a fragment). The
// scheme is read as browsers do, without whitespace and control
// characters ("java\tscript:" is javascript:) and ignoring case; one
// that had such characters is refused even when it reads as allowed.
func safeURL(u string) bool {
	var scheme [6]byte
	n, dirty := 0, false
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch {
		case c == ':':
			if dirty || n > len(scheme) {
				return false
			}
			s := string(scheme[:n])
			return s == "http" || s == "https" || s == "mailto"
		case c == '/' || c == '?' || c == '#':
			return true
		case c <= ' ' || c == 0x7f:
			dirty = true
			continue
		}
		if n < len(scheme) {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			scheme[n] = c
		}
		n++
	}
	return true
}
