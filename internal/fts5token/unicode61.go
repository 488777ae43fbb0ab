package fts5token

import "sync"

// Character kinds stored in classSpans; anything not listed is a separator.
const (
	kindSep   = 0
	kindToken = 1 // may start or continue a token
	kindInner = 2 // may only continue a token (combining diacritics)
)

// maxTokenSize is FTS5_MAX_TOKEN_SIZE: the index stores at most this many
// bytes of any token (and queries are cut the same way), so the tail of a
// longer token never reaches the postings and must not reach ours.
const maxTokenSize = 32768

type span struct {
	lo, hi uint32
	kind   uint8
}

type foldRun struct {
	lo     uint32
	n      uint16
	stride uint8
	delta  int32
}

// asciiTab drives the ASCII fast path: for a byte below 0x80 it holds the
// folded byte if the byte is a token character and 0 if it separates
// tokens; every byte from 0x80 up holds nonASCII. It is written out, not
// computed from the generated tables at start-up (every hook process paid
// for that, tables and all, whether it tokenized or not);
// TestASCIITableFollowsTables checks it against classOf and foldOf, so
// ASCII still follows the probe like everything else.
var asciiTab = [256]byte{
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f,
	0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f,
	0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
}

const nonASCII = 0x80

// utf8Trans1 is sqlite3Utf8Trans1: the payload bits of a UTF-8 lead byte
// 0xC0..0xFF as SQLite's READ_UTF8 sees them (0xFE and 0xFF carry none).
var utf8Trans1 = [64]byte{
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
	0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x00, 0x01, 0x02, 0x03, 0x00, 0x01, 0x00, 0x00,
}

// decode reads one character starting at the non-ASCII byte s[i] exactly
// like SQLite's READ_UTF8, which is what makes invalid UTF-8 tokenize the
// same as in FTS5: a stray continuation byte is taken as the code point of
// its own value (U+0080..U+00BF), a lead byte swallows every continuation
// byte that follows (however many, the value wrapping in 32 bits), and
// results below 0x80, surrogates, U+FFFE and U+FFFF become U+FFFD.
func decode(s string, i int) (cp uint32, next int) {
	cp = uint32(s[i])
	i++
	if cp >= 0xC0 {
		cp = uint32(utf8Trans1[cp-0xC0])
		for i < len(s) && s[i]&0xC0 == 0x80 {
			cp = cp<<6 + uint32(s[i]&0x3F)
			i++
		}
		if cp < 0x80 || cp&0xFFFFF800 == 0xD800 || cp&0xFFFFFFFE == 0xFFFE {
			cp = 0xFFFD
		}
	}
	return cp, i
}

// classOf reports how unicode61 treats cp.
func classOf(cp uint32) uint8 {
	if cp > 0x10FFFF {
		// Only reachable through invalid UTF-8. SQLite's category lookup
		// answers category 0 above its tables, and parsing any category
		// list marks category 0 as a token class, so these are token
		// characters (the same is why unassigned code points are).
		return kindToken
	}
	lo, hi := 0, len(classSpans)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if classSpans[m].hi < cp {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(classSpans) && classSpans[lo].lo <= cp {
		return classSpans[lo].kind
	}
	return kindSep
}

// foldOf returns what token character cp folds to, or ok=false if it folds
// to nothing (remove_diacritics=1 drops combining diacritics).
func foldOf(cp uint32) (f uint32, ok bool) {
	for _, d := range dropSpans {
		if d.lo <= cp && cp <= d.hi {
			return 0, false
		}
	}
	// Last run starting at or before cp.
	lo, hi := 0, len(foldRuns)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if foldRuns[m].lo <= cp {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return cp, true
	}
	r := &foldRuns[lo-1]
	off := cp - r.lo
	if off%uint32(r.stride) == 0 && off/uint32(r.stride) < uint32(r.n) {
		return uint32(int32(cp) + r.delta), true
	}
	return cp, true
}

// appendFolded appends cp's folded form the way FTS5's WRITE_UTF8 does,
// including its 4-byte form for values past U+10FFFF (top bits dropped).
func appendFolded(b []byte, cp uint32) []byte {
	f, ok := foldOf(cp)
	if !ok {
		return b
	}
	switch {
	case f < 0x80:
		return append(b, byte(f))
	case f < 0x800:
		return append(b, 0xC0+byte(f>>6&0x1F), 0x80+byte(f&0x3F))
	case f < 0x10000:
		return append(b, 0xE0+byte(f>>12&0x0F), 0x80+byte(f>>6&0x3F), 0x80+byte(f&0x3F))
	default:
		return append(b, 0xF0+byte(f>>18&0x07), 0x80+byte(f>>12&0x3F), 0x80+byte(f>>6&0x3F), 0x80+byte(f&0x3F))
	}
}

// bufPool recycles token buffers: a buffer handed to the callback escapes,
// so without the pool every Each call would allocate one.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// Each calls fn with every token of s, in order, as FTS5 'porter unicode61'
// emits it. tok is only valid during the call (it may alias an internal
// buffer).
//
// The tokens are the terms FTS5 writes to its index: case and diacritics
// folded, porter-stemmed when 3..64 bytes long, and, like the index does
// beyond the tokenizer, cut to their first 32768 bytes. Invalid UTF-8 is
// not rejected but read the way SQLite reads it (see decode). No token is
// ever empty: nothing that can start a token folds to nothing.
func Each(s string, fn func(tok []byte)) {
	bp := bufPool.Get().(*[]byte)
	buf := *bp
	n := len(s)
	i := 0
	for i < n {
		f := asciiTab[s[i]]
		if f == 0 {
			i++
			continue
		}
		buf = buf[:0]
		if f != nonASCII {
			buf = append(buf, f)
			i++
		} else {
			var cp uint32
			cp, i = decode(s, i)
			if classOf(cp) != kindToken {
				continue
			}
			buf = appendFolded(buf, cp)
		}
	token:
		for i < n {
			f := asciiTab[s[i]]
			switch f {
			case 0:
				break token
			case nonASCII:
				var cp uint32
				cp, i = decode(s, i)
				if classOf(cp) == kindSep {
					break token
				}
				buf = appendFolded(buf, cp)
			default:
				buf = append(buf, f)
				i++
			}
		}
		tok := buf
		if len(tok) >= porterMinToken && len(tok) <= porterMaxToken {
			tok = stem(tok)
		} else if len(tok) > maxTokenSize {
			tok = tok[:maxTokenSize]
		}
		fn(tok)
	}
	// Keep ordinary buffers, but do not pin one grown by a huge token.
	if cap(buf) <= 4*maxTokenSize {
		*bp = buf
		bufPool.Put(bp)
	}
}

// Tokens returns the tokens of s as Each yields them.
func Tokens(s string) []string {
	var out []string
	Each(s, func(tok []byte) { out = append(out, string(tok)) })
	return out
}
