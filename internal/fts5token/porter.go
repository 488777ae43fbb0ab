package fts5token

// FTS5's porter tokenizer stems only tokens of porterMinToken..porterMaxToken
// bytes (FTS5_PORTER_MAX_TOKEN); all others pass through unchanged. Lengths
// are in bytes of the folded token, so a short word with non-ASCII letters
// may escape stemming by being "long".
const (
	porterMinToken = 3
	porterMaxToken = 64
)

// The stemmer below follows fts5_tokenize.c rule for rule, including where
// it departs from textbook Porter: 'y' counts as a vowel in *v* whenever it
// is not the first letter, step 1a treats a bare "sses" or "ies" as a plain
// "-s" word, suffixes must leave a non-empty stem, and step 2 has the later
// "logi" rule. Bytes outside a-z (digits, UTF-8 of non-ASCII letters)
// are simply consonants.

func isVowel(c byte, yIsVowel bool) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	case 'y':
		return yIsVowel
	}
	return false
}

// gobbleVC skips one [C]V...C sequence: the leading consonants, then
// vowels up to and including the next consonant. It returns the length
// consumed, or 0 if z holds no complete VC. prevCons tells whether the
// character before z was a consonant, which decides what a leading 'y' is.
func gobbleVC(z []byte, prevCons bool) int {
	cons := prevCons
	i := 0
	for ; i < len(z); i++ {
		cons = !isVowel(z[i], cons)
		if !cons {
			break
		}
	}
	for i++; i < len(z); i++ {
		cons = !isVowel(z[i], cons)
		if cons {
			return i + 1
		}
	}
	return 0
}

// mGt0 is the Porter condition m > 0.
func mGt0(z []byte) bool { return gobbleVC(z, false) != 0 }

// mEq1 is the Porter condition m = 1.
func mEq1(z []byte) bool {
	n := gobbleVC(z, false)
	return n != 0 && gobbleVC(z[n:], true) == 0
}

// mGt1 is the Porter condition m > 1.
func mGt1(z []byte) bool {
	n := gobbleVC(z, false)
	return n != 0 && gobbleVC(z[n:], true) != 0
}

// mGt1ST is the Porter condition m > 1 and (*S or *T).
func mGt1ST(z []byte) bool {
	if len(z) == 0 {
		return false
	}
	c := z[len(z)-1]
	return (c == 's' || c == 't') && mGt1(z)
}

// hasVowel is the Porter condition *v*.
func hasVowel(z []byte) bool {
	for i, c := range z {
		if isVowel(c, i > 0) {
			return true
		}
	}
	return false
}

// ostar is the Porter condition *o: ends consonant-vowel-consonant, the
// last not w, x or y.
func ostar(z []byte) bool {
	if len(z) == 0 {
		return false
	}
	switch z[len(z)-1] {
	case 'w', 'x', 'y':
		return false
	}
	var mask uint
	cons := false
	for _, c := range z {
		cons = !isVowel(c, cons)
		mask <<= 1
		if cons {
			mask |= 1
		}
	}
	return mask&7 == 5
}

type rule struct {
	suffix, repl string
	cond         func(stem []byte) bool
}

// FTS5 dispatches on the second-to-last byte and then tries that group's
// suffixes in order; the first suffix that matches decides, whether or not
// its condition holds. Grouping by the suffix's own second-to-last byte
// reproduces that. The sets are written out grouped, as array literals the
// compiler lays out: a table built by a function runs in the package's
// initialiser, in every process of the binary.
type ruleSet [256][]rule

var (
	step2 = ruleSet{
		'a': {{"ational", "ate", mGt0}, {"tional", "tion", mGt0}},
		'c': {{"enci", "ence", mGt0}, {"anci", "ance", mGt0}},
		'e': {{"izer", "ize", mGt0}},
		'g': {{"logi", "log", mGt0}},
		'l': {{"bli", "ble", mGt0}, {"alli", "al", mGt0}, {"entli", "ent", mGt0}, {"eli", "e", mGt0}, {"ousli", "ous", mGt0}},
		'o': {{"ization", "ize", mGt0}, {"ation", "ate", mGt0}, {"ator", "ate", mGt0}},
		's': {{"alism", "al", mGt0}, {"iveness", "ive", mGt0}, {"fulness", "ful", mGt0}, {"ousness", "ous", mGt0}},
		't': {{"aliti", "al", mGt0}, {"iviti", "ive", mGt0}, {"biliti", "ble", mGt0}},
	}
	step3 = ruleSet{
		'a': {{"ical", "ic", mGt0}},
		's': {{"ness", "", mGt0}},
		't': {{"icate", "ic", mGt0}, {"iciti", "ic", mGt0}},
		'u': {{"ful", "", mGt0}},
		'v': {{"ative", "", mGt0}},
		'z': {{"alize", "al", mGt0}},
	}
	step4 = ruleSet{
		'a': {{"al", "", mGt1}},
		'c': {{"ance", "", mGt1}, {"ence", "", mGt1}},
		'e': {{"er", "", mGt1}},
		'i': {{"ic", "", mGt1}},
		'l': {{"able", "", mGt1}, {"ible", "", mGt1}},
		'n': {{"ant", "", mGt1}, {"ement", "", mGt1}, {"ment", "", mGt1}, {"ent", "", mGt1}},
		'o': {{"ion", "", mGt1ST}, {"ou", "", mGt1}},
		's': {{"ism", "", mGt1}},
		't': {{"ate", "", mGt1}, {"iti", "", mGt1}},
		'u': {{"ous", "", mGt1}},
		'v': {{"ive", "", mGt1}},
		'z': {{"ize", "", mGt1}},
	}
	// Step 1b's second half, applied only after step 1b removed "ed" or
	// "ing"; unconditional.
	step1b2 = ruleSet{
		'a': {{"at", "ate", nil}},
		'b': {{"bl", "ble", nil}},
		'i': {{"iz", "ize", nil}},
	}
)

// apply runs one rule set on w[:n] and returns the new length and whether
// a suffix was replaced. A suffix must leave at least one byte of stem.
// w must have room for a replacement longer than its suffix.
func (rs *ruleSet) apply(w []byte, n int) (int, bool) {
	if n < 3 {
		return n, false
	}
	for _, r := range rs[w[n-2]] {
		ls := len(r.suffix)
		if n <= ls || string(w[n-ls:n]) != r.suffix {
			continue
		}
		stem := n - ls
		if r.cond != nil && !r.cond(w[:stem]) {
			return n, false
		}
		return stem + copy(w[stem:stem+len(r.repl)], r.repl), true
	}
	return n, false
}

// stem applies FTS5's porter stemmer to tok in place (3 <= len(tok) <= 64)
// and returns the stemmed prefix. The stem is never longer than tok: the
// only growing rules run after a removal of at least two bytes.
func stem(tok []byte) []byte {
	w := tok
	n := len(w)

	// Step 1a.
	if w[n-1] == 's' {
		switch {
		case w[n-2] == 'e':
			if (n > 4 && w[n-4] == 's' && w[n-3] == 's') || (n > 3 && w[n-3] == 'i') {
				n -= 2 // sses -> ss, ies -> i
			} else {
				n-- // es -> e
			}
		case w[n-2] != 's':
			n--
		}
	}

	// Step 1b.
	removed := false
	switch {
	case n > 3 && string(w[n-3:n]) == "eed":
		if mGt0(w[:n-3]) {
			n-- // eed -> ee
		}
	case n > 2 && string(w[n-2:n]) == "ed":
		if hasVowel(w[:n-2]) {
			n -= 2
			removed = true
		}
	case n > 3 && string(w[n-3:n]) == "ing":
		if hasVowel(w[:n-3]) {
			n -= 3
			removed = true
		}
	}
	if removed {
		var grew bool
		n, grew = step1b2.apply(w, n)
		if !grew {
			c := w[n-1]
			if !isVowel(c, false) && c != 'l' && c != 's' && c != 'z' && n >= 2 && c == w[n-2] {
				n--
			} else if mEq1(w[:n]) && ostar(w[:n]) {
				w[n] = 'e'
				n++
			}
		}
	}

	// Step 1c.
	if w[n-1] == 'y' && hasVowel(w[:n-1]) {
		w[n-1] = 'i'
	}

	n, _ = step2.apply(w, n)
	n, _ = step3.apply(w, n)
	n, _ = step4.apply(w, n)

	// Step 5a.
	if w[n-1] == 'e' {
		z := w[:n-1]
		if mGt1(z) || (mEq1(z) && !ostar(z)) {
			n--
		}
	}

	// Step 5b.
	if n > 1 && w[n-1] == 'l' && w[n-2] == 'l' && mGt1(w[:n-1]) {
		n--
	}
	return w[:n]
}
