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
// reproduces that.
type ruleSet [256][]rule

func newRuleSet(rules ...rule) *ruleSet {
	var rs ruleSet
	for _, r := range rules {
		k := r.suffix[len(r.suffix)-2]
		rs[k] = append(rs[k], r)
	}
	return &rs
}

var (
	step2 = newRuleSet(
		rule{"ational", "ate", mGt0},
		rule{"tional", "tion", mGt0},
		rule{"enci", "ence", mGt0},
		rule{"anci", "ance", mGt0},
		rule{"izer", "ize", mGt0},
		rule{"logi", "log", mGt0},
		rule{"bli", "ble", mGt0},
		rule{"alli", "al", mGt0},
		rule{"entli", "ent", mGt0},
		rule{"eli", "e", mGt0},
		rule{"ousli", "ous", mGt0},
		rule{"ization", "ize", mGt0},
		rule{"ation", "ate", mGt0},
		rule{"ator", "ate", mGt0},
		rule{"alism", "al", mGt0},
		rule{"iveness", "ive", mGt0},
		rule{"fulness", "ful", mGt0},
		rule{"ousness", "ous", mGt0},
		rule{"aliti", "al", mGt0},
		rule{"iviti", "ive", mGt0},
		rule{"biliti", "ble", mGt0},
	)
	step3 = newRuleSet(
		rule{"ical", "ic", mGt0},
		rule{"ness", "", mGt0},
		rule{"icate", "ic", mGt0},
		rule{"iciti", "ic", mGt0},
		rule{"ful", "", mGt0},
		rule{"ative", "", mGt0},
		rule{"alize", "al", mGt0},
	)
	step4 = newRuleSet(
		rule{"al", "", mGt1},
		rule{"ance", "", mGt1},
		rule{"ence", "", mGt1},
		rule{"er", "", mGt1},
		rule{"ic", "", mGt1},
		rule{"able", "", mGt1},
		rule{"ible", "", mGt1},
		rule{"ant", "", mGt1},
		rule{"ement", "", mGt1},
		rule{"ment", "", mGt1},
		rule{"ent", "", mGt1},
		rule{"ion", "", mGt1ST},
		rule{"ou", "", mGt1},
		rule{"ism", "", mGt1},
		rule{"ate", "", mGt1},
		rule{"iti", "", mGt1},
		rule{"ous", "", mGt1},
		rule{"ive", "", mGt1},
		rule{"ize", "", mGt1},
	)
	// Step 1b's second half, applied only after step 1b removed "ed" or
	// "ing"; unconditional.
	step1b2 = newRuleSet(
		rule{"at", "ate", nil},
		rule{"bl", "ble", nil},
		rule{"iz", "ize", nil},
	)
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
