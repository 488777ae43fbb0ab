package fts5token

import (
	"bufio"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var wordRE = regexp.MustCompile(`[A-Za-z]+`)

// goWords collects the distinct words of the Go source tree (identifiers
// and comments, so plenty of English plus camelCase), and
// /usr/share/dict/words where it exists. Sorted for determinism.
func goWords(tb testing.TB) []string {
	tb.Helper()
	seen := map[string]bool{}
	root := filepath.Join(goroot(tb), "src")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for _, w := range wordRE.FindAll(b, -1) {
			seen[string(w)] = true
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if f, err := os.Open("/usr/share/dict/words"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			seen[strings.TrimSpace(sc.Text())] = true
		}
		f.Close()
	}
	delete(seen, "")
	words := make([]string, 0, len(seen))
	for w := range seen {
		words = append(words, w)
	}
	slices.Sort(words)
	if len(words) < 1000 {
		tb.Fatalf("only %d words found under %s", len(words), root)
	}
	return words
}

// suffixes exercise every Porter rule, including the conditions that make
// them fail.
var suffixes = []string{
	"", "s", "es", "ses", "sses", "ies", "ss", "ed", "eed", "ing", "ly", "y",
	"at", "bl", "iz", "ated", "bled", "ized", "ating", "hopping", "ling",
	"ational", "tional", "enci", "anci", "izer", "logi", "bli", "alli",
	"entli", "eli", "ousli", "ization", "ation", "ator", "alism", "iveness",
	"fulness", "ousness", "aliti", "iviti", "biliti", "icate", "ative",
	"alize", "iciti", "ical", "ful", "ness", "al", "ance", "ence", "er", "ic",
	"able", "ible", "ant", "ement", "ment", "ent", "ion", "sion", "tion", "ou",
	"ism", "ate", "iti", "ous", "ive", "ize", "e", "le", "ll", "izes",
	"izations", "fulnesses", "ousli", "ingly", "edly", "ers", "ions",
}

// packDocs joins words into documents of about n words with varied
// separators, so that every token also meets its neighbours.
func packDocs(words []string, n int, rng *rand.Rand) []string {
	seps := []string{" ", " ", " ", ", ", ". ", "\n", "-", "_", "/", "'", "\t", "  ", "... "}
	var docs []string
	var b strings.Builder
	for i, w := range words {
		b.WriteString(w)
		b.WriteString(seps[rng.IntN(len(seps))])
		if (i+1)%n == 0 {
			docs = append(docs, b.String())
			b.Reset()
		}
	}
	if b.Len() > 0 {
		docs = append(docs, b.String())
	}
	return docs
}

func TestEnglishCorpus(t *testing.T) {
	t.Parallel() // CPU-bound: runs beside the package's other long tests
	ref := porterRef(t)
	rng := rand.New(rand.NewPCG(1, 2))
	words := goWords(t)

	// Every word as found, and lower-cased, upper-cased and capitalised.
	var corpus []string
	for _, w := range words {
		corpus = append(corpus, w, strings.ToLower(w), strings.ToUpper(w))
		if len(w) > 1 {
			corpus = append(corpus, strings.ToUpper(w[:1])+strings.ToLower(w[1:]))
		}
	}
	// Morphological variants: every suffix on a fixed sample of the words.
	every := 4
	if testing.Short() {
		every = 40
	}
	var stems []string
	for i := 0; i < len(words); i += every {
		stems = append(stems, words[i])
	}
	for _, w := range stems {
		lw := strings.ToLower(w)
		for _, suf := range suffixes {
			corpus = append(corpus, lw+suf)
		}
		// Trim a letter or two first, to hit consonant/vowel boundaries.
		if len(lw) > 3 {
			corpus = append(corpus, lw[:len(lw)-1]+suffixes[rng.IntN(len(suffixes))])
			corpus = append(corpus, lw[:len(lw)-2]+suffixes[rng.IntN(len(suffixes))])
		}
	}
	n := checkTexts(t, ref, packDocs(corpus, 500, rng))
	t.Logf("%d words, %d corpus entries, %d tokens compared", len(words), len(corpus), n)
}

func TestHandPicked(t *testing.T) {
	texts := []string{
		"", " ", "a", "A", "I", "is", "as", "yes", "sky", "yyy", "ayy", "bye",
		"The quick brown Fox JUMPS over the lazy dog's back.",
		"snake_case_identifier kebab-case-name dotted.names.here CamelCaseWord",
		"https://example.com/path/to/file.html?q=searching&lang=en#fragment",
		"/usr/local/lib/libsqlite3.so.0 C:\\Windows\\System32 ~/.config/anamnesis",
		"16:9 3.14 1,000,000 1e10 0x1F 2024-01-02T03:04:05Z v1.60.1 #42 @user",
		"state-of-the-art e-mail re-entry co-operate don't won't it's",
		"caresses ponies ties caress cats feed agreed plastered bled motoring sing",
		"conflated troubled sized hopping tanned falling hissing fizzed failing filing",
		"happy sky relational conditional rational valenci hesitanci digitizer",
		"conformabli radicalli differentli vileli analogousli vietnamization",
		"predication operator feudalism decisiveness hopefulness callousness",
		"formaliti sensitiviti sensibiliti triplicate formative formalize",
		"electriciti electrical hopeful goodness revival allowance inference",
		"airliner gyroscopic adjustable defensible irritant replacement adjustment",
		"dependent adoption homologou communism activate angulariti homologous",
		"effective bowdlerize probate rate cease controll roll generalizations",
		"oscillators agreement abatements aed ied eed ing ed bed sing ring",
		"ties dies lies pies sees fees frees trees flees spies skies flies",
		"ees ies sses ss s es eses", "yed ying yyed aying boying",
		"zzzzzzzzzzzzzz", "1234567890", "abc123def", "123ing", "ing123",
		"MiXeD CaSe TeXt WiTh NuMbErS 123 AnD sYmBoLs !@#$%^&*()",
		"tab\tseparated\nnew\r\nline\vvertical\fform\x00nul\x01ctl\x7fdel",
		"quotes 'single' \"double\" `back` «guillemets» „low“ ‘curly’",
		"brackets (paren) [square] {curly} <angle>",
		"math a+b=c x*y/z 2^10 ~not |pipe| a&&b a||b",
	}
	n := checkTexts(t, porterRef(t), texts)
	t.Logf("%d tokens compared", n)
}

func TestNonASCII(t *testing.T) {
	texts := []string{
		"café naïve résumé coöperate façade jalapeño piñata São Paulo Zürich",
		"Crème Brûlée ÀÉÎÕÜ àéîõü ÅåÆæØøŒœ Ðð Þþ ł Ł đ Đ ħ Ħ ı İ ĳ Ĳ ŉ ſ",
		"Straße STRASSE straße ß ẞ groß GROSS Maß",
		"İstanbul ISTANBUL ıstanbul istanbul Iğdır ığdır Çağrı ŞEHİR şehir",
		"Ελληνικά ΕΛΛΗΝΙΚΆ ἀρχή Ὀδυσσεύς σίσυφος ΣΊΣΥΦΟΣ ς Σ ΐ ΰ",
		"Русский язык РУССКИЙ ЯЗЫК Ёлка ёлка Ђ ђ Ї ї Ґ ґ",
		"中文分词 日本語のテキスト ひらがな カタカナ 한국어 텍스트",
		"العربية النص مُحَمَّد עברית טקסט שָׁלוֹם",
		"हिन्दी বাংলা தமிழ் ไทย ພາສາລາວ ქართული Հայերեն አማርኛ",
		"emoji 😀 👍🏽 👨‍👩‍👧‍👦 🇩🇪 ❤️ ✔️ ☃ ★",
		"e\u0301 a\u0300 o\u0308 n\u0303 c\u0327 x\u0301\u0302\u0303 \u0301start end\u0301",
		"\u0301\u0302\u0303 a\u0305b a\u0310b a\u0332b a\u0336b a\u20d7b a\u0345b",
		"zero\u200bwidth\u200cnon\u200djoiner\u2060word\ufeffbom",
		"nbsp\u00a0en\u2002em\u2003thin\u2009hair\u200aideo\u3000narrow\u202fsep\u2028par\u2029",
		"private\ue000use\uf8ff planes\U000f0000\U000ffffd\U00100000\U0010fffd",
		"astral 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐀𝐁𝐂 𝟘𝟙𝟚 𐐀𐐨 𐐧𐑏 𓀀 𠀀𪘀 🜀",
		"fullwidth ＡＢＣ ａｂｃ １２３ halfwidth ｱｲｳ",
		"ligatures ﬁ ﬂ ﬀ ﬃ Ǆ ǅ ǆ Ǳ ǲ ǳ ᾈ ᾀ ῼ",
		"digits ٠١٢ ۰۱۲ ०१२ ০১২ ² ³ ¹ ¼ ½ ¾ Ⅻ ⅻ ① ⓐ",
		"superscript ª º µ · ¸ ¹ ¿ ¡ × ÷",
		"unassigned \u0378\u0379 \u0380 \u0590 \U0001FFFE \U000E0001 \U000E0100",
		"specials \ufffd \ufffc \ufff9 \U0001d173",
		"éééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé",
		"running\u0301 runn\u0301ing hoppé\u0301ing CAFÉS cafés naïvely",
	}
	n := checkTexts(t, porterRef(t), texts)
	t.Logf("%d tokens compared", n)
}

func TestTokenLengths(t *testing.T) {
	var texts []string
	endings := []string{"", "s", "ing", "ed", "ational", "ness", "y", "e", "ll", "ies"}
	for l := 1; l <= 70; l++ {
		for _, end := range endings {
			base := strings.Repeat("ab", l)[:l]
			texts = append(texts, base+end, strings.Repeat("x", l)+end, strings.Repeat("bat", l)[:l]+end)
			// Byte length versus character length around the 64-byte
			// stemming limit: é is two bytes, 한 three, 𝔘 four.
			texts = append(texts, strings.Repeat("é", l/2)+end, strings.Repeat("한", l/3)+end,
				strings.Repeat("𝔘", l/4)+end, "a"+strings.Repeat("é", l/2)+"ing")
			// Removed diacritics shrink a token below the limit.
			texts = append(texts, strings.Repeat("a\u0301", l)+end)
		}
	}
	for _, l := range []int{1000, 4096, 32766, 32767, 32768, 32769, 32770, 40000, 70000} {
		texts = append(texts,
			strings.Repeat("a", l),
			strings.Repeat("b", l)+"ing",
			"short "+strings.Repeat("Z", l)+" tail",
			// A multi-byte character straddling the 32768-byte cut.
			strings.Repeat("q", l-1)+"é"+strings.Repeat("q", 10),
			strings.Repeat("q", l-2)+"한한",
			strings.Repeat("é", l/2),
			strings.Repeat("a\u0301", l/2),
		)
	}
	n := checkTexts(t, porterRef(t), texts)
	t.Logf("%d texts, %d tokens compared", len(texts), n)
}

// TestInvalidUTF8 checks that malformed input tokenizes as SQLite's
// READ_UTF8 reads it.
func TestInvalidUTF8(t *testing.T) {
	texts := []string{
		"a\x80b", "a\xbfb", "\xaa\xb2\xb5\xba", "a\xc0b", "a\xc1\xbfb", "a\xc3b",
		"a\xc3\xa9\xa9b", "\xc3\xa9\x80\x80\x80\x80\x80\x80\x80", "a\xe2\x82b",
		"a\xed\xa0\x80b", "a\xef\xbf\xbeb", "a\xef\xbf\xbfb", "a\xf4\x90\x80\x80b",
		"a\xf7\xbf\xbf\xbfb", "a\xf8\x88\x80\x80\x80b", "a\xfc\x84\x80\x80\x80\x80b",
		"a\xfeb", "a\xffb", "\xff\xfe\xfd", "a\xe0\x80\x80b", "a\xf0\x80\x80\x80b",
		"x\xf4\x8f\xbf\xbfy", "x\xf3\xbf\xbf\xbfy", "\xcc\x81abc", "abc\xcc",
		strings.Repeat("\xbf", 40), strings.Repeat("a\xc3", 30), "run\x80ning",
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		b := make([]byte, 1+rng.IntN(40))
		for i := range b {
			switch rng.IntN(4) {
			case 0:
				b[i] = byte(rng.IntN(256))
			case 1:
				b[i] = 0x80 + byte(rng.IntN(64))
			case 2:
				b[i] = 0xC0 + byte(rng.IntN(64))
			default:
				b[i] = "aeiousyngtdz "[rng.IntN(13)]
			}
		}
		texts = append(texts, string(b))
	}
	n := checkTexts(t, porterRef(t), texts)
	t.Logf("%d texts, %d tokens compared", len(texts), n)
}

// TestRandomCodePoints samples every plane and puts each code point at the
// start, inside and at the end of tokens, alone, and among others from the
// same block.
func TestRandomCodePoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	perPlane := 3000
	if testing.Short() {
		perPlane = 300
	}
	randIn := func(lo, hi int) rune {
		for {
			r := rune(lo + rng.IntN(hi-lo))
			if r < 0xD800 || r > 0xDFFF {
				return r
			}
		}
	}
	var texts []string
	for plane := 0; plane <= 16; plane++ {
		lo, hi := plane<<16, (plane+1)<<16
		for range perPlane {
			r := randIn(lo, hi)
			c := string(r)
			texts = append(texts, c, "a"+c+"b", c+"ing", "x"+c, c+c+" "+c+"-"+c,
				"Ab"+c+"Cd"+c+"running")
			var b strings.Builder
			base := int(r) &^ 0xFF
			for range 1 + rng.IntN(12) {
				b.WriteRune(randIn(base, base+0x100))
				if rng.IntN(4) == 0 {
					b.WriteByte("aZ9 .-"[rng.IntN(6)])
				}
			}
			texts = append(texts, b.String())
		}
	}
	n := checkTexts(t, porterRef(t), texts)
	t.Logf("%d texts, %d tokens compared", len(texts), n)
}

// TestEveryCodePoint confirms the generated tables against the linked
// SQLite for all of Unicode: each code point alone, doubled, and at the
// start, middle and end of a token. It fails if tables.go is stale.
func TestEveryCodePoint(t *testing.T) {
	if testing.Short() {
		t.Skip("probes all 1.1M code points")
	}
	t.Parallel() // CPU-bound: runs beside the package's other long tests
	ref := porterRef(t)
	const batch = 1 << 15
	total := 0
	var texts []string
	for cp := 0; cp <= 0x10FFFF; cp++ {
		if cp >= 0xD800 && cp <= 0xDFFF {
			continue
		}
		c := string(rune(cp))
		texts = append(texts, c+c+" a"+c+"b "+c+"z e"+c)
		if len(texts) == batch || cp == 0x10FFFF {
			total += checkTexts(t, ref, texts)
			texts = texts[:0]
			if t.Failed() {
				t.Fatalf("stopping at U+%04X; regenerate tables.go with go generate?", cp)
			}
		}
	}
	t.Logf("%d tokens compared", total)
}

// TestASCIITableFollowsTables checks the written-out ASCII table against
// the generated tables it was derived from: after go generate, a change
// there must show here.
func TestASCIITableFollowsTables(t *testing.T) {
	for c := range 256 {
		want := byte(nonASCII)
		if c < 128 {
			want = 0
			if classOf(uint32(c)) != kindSep {
				if f, ok := foldOf(uint32(c)); ok && f != 0 && f < 0x80 {
					want = byte(f)
				}
			}
		}
		if asciiTab[c] != want {
			t.Errorf("asciiTab[%#02x] = %#02x, the tables say %#02x", c, asciiTab[c], want)
		}
	}
}

// TestTableInvariants checks what the code assumes of the generated
// tables.
func TestTableInvariants(t *testing.T) {
	for c := range 128 {
		if asciiTab[c] == nonASCII {
			t.Errorf("ASCII %q is off the fast path", rune(c))
		}
	}
	// Each promises non-empty tokens.
	for _, d := range dropSpans {
		for cp := d.lo; cp <= d.hi; cp++ {
			if classOf(cp) == kindToken {
				t.Errorf("U+%04X can start a token but folds to nothing", cp)
			}
		}
	}
	for i := 1; i < len(classSpans); i++ {
		if classSpans[i].lo <= classSpans[i-1].hi {
			t.Errorf("classSpans not sorted at %d", i)
		}
	}
	for i := 1; i < len(foldRuns); i++ {
		p := foldRuns[i-1]
		if foldRuns[i].lo <= p.lo+uint32(p.n-1)*uint32(p.stride) {
			t.Errorf("foldRuns overlap at %d", i)
		}
	}
	if probedSQLiteVersion == "" {
		t.Error("tables.go lacks the probed SQLite version")
	}
}

func TestDecodeMatchesUTF8(t *testing.T) {
	// For valid UTF-8, SQLite's reader and Go's agree.
	for r := rune(0x80); r <= utf8.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		s := string(r)
		cp, next := decode(s, 0)
		want := uint32(r)
		if r == 0xFFFE || r == 0xFFFF {
			want = 0xFFFD
		}
		if cp != want || next != len(s) {
			t.Fatalf("decode(%q) = %#x, %d", s, cp, next)
		}
	}
}

func TestEachReusesBuffer(t *testing.T) {
	// Callers may keep nothing, but must be able to mutate tok freely.
	var got []string
	Each("Running DOGS run", func(tok []byte) {
		got = append(got, string(tok))
		for i := range tok {
			tok[i] = 'X'
		}
	})
	if want := []string{"run", "dog", "run"}; !slices.Equal(got, want) {
		t.Fatalf("got %q want %q", got, want)
	}
}

// goroot asks the go command where its source tree is (runtime.GOROOT is
// deprecated: it names the build machine's root, not this one's).
func goroot(tb testing.TB) string {
	tb.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		tb.Fatalf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}
