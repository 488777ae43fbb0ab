package markdown

import (
	"fmt"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

type tcase struct{ name, in, want string }

func run1(t *testing.T, cases []tcase) {
	t.Helper()
	for _, c := range cases {
		got := HTML(c.in)
		if got != c.want {
			t.Errorf("%s: HTML(%q)\n got: %q\nwant: %q", c.name, c.in, got, c.want)
		}
		if err := wellFormed(got); err != nil {
			t.Errorf("%s: HTML(%q) is not well-formed: %v\n%s", c.name, c.in, err, got)
		}
	}
}

func TestBlocks(t *testing.T) { run1(t, blockCases) }

var blockCases = []tcase{
	{"empty", "", ""},
	{"blank lines", "\n  \n\t\n", ""},
	{"paragraph", "hello", "<p>hello</p>\n"},
	{"two paragraphs", "a\nb\n\n\nc", "<p>a\nb</p>\n<p>c</p>\n"},
	{"leading spaces of lines dropped", "  a\n   b  ", "<p>a\nb</p>\n"},
	{"hard break by spaces", "a  \nb", "<p>a<br>\nb</p>\n"},
	{"hard break by backslash", "a\\\nb", "<p>a<br>\nb</p>\n"},
	{"one trailing space is soft", "a \nb", "<p>a\nb</p>\n"},
	{"no break at the end", "a  ", "<p>a</p>\n"},
	{"backslash at the end", "a\\", "<p>a\\</p>\n"},
	{"CRLF", "a\r\nb\r\n\r\nc\rd", "<p>a\nb</p>\n<p>c\nd</p>\n"},

	{"atx levels", "# 1\n## 2\n###### 6\n####### 7", "<h1>1</h1>\n<h2>2</h2>\n<h6>6</h6>\n<p>####### 7</p>\n"},
	{"atx closing run", "# a ##\n## b#\n### c \\#", "<h1>a</h1>\n<h2>b#</h2>\n<h3>c #</h3>\n"},
	{"atx needs a space", "#hashtag", "<p>#hashtag</p>\n"},
	{"atx empty", "#\n## ##", "<h1></h1>\n<h2></h2>\n"},
	{"atx inline", "# *a* `b`", "<h1><em>a</em> <code>b</code></h1>\n"},
	{"atx interrupts a paragraph", "a\n# b", "<p>a</p>\n<h1>b</h1>\n"},
	{"setext", "a\nb\n===\n\nc\n---", "<h1>a\nb</h1>\n<h2>c</h2>\n"},

	{"thematic breaks", "---\n***\n___\n - - -\n* * *", "<hr>\n<hr>\n<hr>\n<hr>\n<hr>\n"},
	{"two dashes are text", "--", "<p>--</p>\n"},
	{"thematic after a paragraph", "a\n\n---", "<p>a</p>\n<hr>\n"},

	{"fenced", "```\na < b\n  c\n```", "<pre><code>a &lt; b\n  c\n</code></pre>\n"},
	{"fenced info", "```go linenums\nx\n```", "<pre><code class=\"language-go\">x\n</code></pre>\n"},
	{"fenced tilde", "~~~ python\n```\n~~~", "<pre><code class=\"language-python\">```\n</code></pre>\n"},
	{"fenced keeps tabs and blank lines", "```\n\tx\n\n y\n```", "<pre><code>\tx\n\n y\n</code></pre>\n"},
	{"fenced unterminated", "```\na\n\nb", "<pre><code>a\n\nb\n</code></pre>\n"},
	{"fenced longer close", "````\n```\n`````\nafter", "<pre><code>```\n</code></pre>\n<p>after</p>\n"},
	{"fenced indented", "  ```\n  a\n    b\n c\n  ```", "<pre><code>a\n  b\nc\n</code></pre>\n"},
	{"fenced markdown stays text", "```\n# h\n*e*\n```", "<pre><code># h\n*e*\n</code></pre>\n"},
	{"backtick info with backtick is no fence", "``` a`b\nx", "<p>``` a`b\nx</p>\n"},
	{"fenced info escaped", "```a\"b\nx\n```", "<pre><code class=\"language-a&quot;b\">x\n</code></pre>\n"},
	{"empty fence", "```\n```", "<pre><code></code></pre>\n"},

	{"indented", "    a\n      b\n\n    c\n\n", "<pre><code>a\n  b\n\nc\n</code></pre>\n"},
	{"indented tab", "\tx := 1", "<pre><code>x := 1\n</code></pre>\n"},
	{"indented does not interrupt a paragraph", "a\n    b", "<p>a\nb</p>\n"},

	{"quote", "> a\n> b", "<blockquote>\n<p>a\nb</p>\n</blockquote>\n"},
	{"quote lazy", "> a\nb", "<blockquote>\n<p>a\nb</p>\n</blockquote>\n"},
	{"quote ends at blank", "> a\n\nb", "<blockquote>\n<p>a</p>\n</blockquote>\n<p>b</p>\n"},
	{"quote nested", "> a\n>> b\n> > > c", "<blockquote>\n<p>a</p>\n<blockquote>\n<p>b</p>\n<blockquote>\n<p>c</p>\n</blockquote>\n</blockquote>\n</blockquote>\n"},
	{"quote with blocks", "> # h\n> - x\n> ```\n> code\n> ```", "<blockquote>\n<h1>h</h1>\n<ul>\n<li>x</li>\n</ul>\n<pre><code>code\n</code></pre>\n</blockquote>\n"},
	{"quote paragraphs", "> a\n>\n> b", "<blockquote>\n<p>a</p>\n<p>b</p>\n</blockquote>\n"},
	{"quote empty", ">", "<blockquote>\n</blockquote>\n"},

	{"bullet tight", "- a\n- b\n* c", "<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n<ul>\n<li>c</li>\n</ul>\n"},
	{"bullet plus", "+ a", "<ul>\n<li>a</li>\n</ul>\n"},
	{"bullet loose", "- a\n\n- b", "<ul>\n<li>\n<p>a</p>\n</li>\n<li>\n<p>b</p>\n</li>\n</ul>\n"},
	{"loose by blocks inside an item", "- a\n\n  b\n- c", "<ul>\n<li>\n<p>a</p>\n<p>b</p>\n</li>\n<li>\n<p>c</p>\n</li>\n</ul>\n"},
	{"blank line after the list keeps it tight", "- a\n- b\n\nc", "<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n<p>c</p>\n"},
	{"nested", "- a\n  - b\n    - c\n- d", "<ul>\n<li>a\n<ul>\n<li>b\n<ul>\n<li>c</li>\n</ul>\n</li>\n</ul>\n</li>\n<li>d</li>\n</ul>\n"},
	{"nested loose outer only", "- a\n  - b\n\n- c", "<ul>\n<li>\n<p>a</p>\n<ul>\n<li>b</li>\n</ul>\n</li>\n<li>\n<p>c</p>\n</li>\n</ul>\n"},
	{"ordered", "1. a\n2. b", "<ol>\n<li>a</li>\n<li>b</li>\n</ol>\n"},
	{"ordered start", "3) a\n4) b", "<ol start=\"3\">\n<li>a</li>\n<li>b</li>\n</ol>\n"},
	{"ordered delimiter change", "1. a\n1) b", "<ol>\n<li>a</li>\n</ol>\n<ol>\n<li>b</li>\n</ol>\n"},
	{"ten digits is no item", "1234567890. a", "<p>1234567890. a</p>\n"},
	{"only 1. interrupts a paragraph", "a\n2. b\n1. c", "<p>a\n2. b</p>\n<ol>\n<li>c</li>\n</ol>\n"},
	{"bullet interrupts a paragraph", "a\n- b", "<p>a</p>\n<ul>\n<li>b</li>\n</ul>\n"},
	{"a lone dash under text is a setext underline", "a\n-\nb", "<h2>a</h2>\n<p>b</p>\n"},
	{"empty item does not interrupt", "a\n*\nb", "<p>a\n*\nb</p>\n"},
	{"item lazy line", "- a\nb", "<ul>\n<li>a\nb</li>\n</ul>\n"},
	{"item with code", "- a\n\n      code", "<ul>\n<li>\n<p>a</p>\n<pre><code>code\n</code></pre>\n</li>\n</ul>\n"},
	{"item with fence", "- a\n  ```\n  x\n  ```", "<ul>\n<li>a\n<pre><code>x\n</code></pre>\n</li>\n</ul>\n"},
	{"item with quote", "- > q", "<ul>\n<li>\n<blockquote>\n<p>q</p>\n</blockquote>\n</li>\n</ul>\n"},
	{"empty item", "-\n- a", "<ul>\n<li></li>\n<li>a</li>\n</ul>\n"},
	{"item starting blank", "-\n  a", "<ul>\n<li>a</li>\n</ul>\n"},
	{"wide indent is code in the item", "-     code", "<ul>\n<li>\n<pre><code>code\n</code></pre>\n</li>\n</ul>\n"},
	{"dash without space is text", "-a", "<p>-a</p>\n"},
	{"list ends at unindented paragraph after blank", "- a\n\nb", "<ul>\n<li>a</li>\n</ul>\n<p>b</p>\n"},
	{"tab after marker", "-\ta\n-\tb", "<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n"},

	{"task items", "- [ ] todo\n- [x] done\n- [X] DONE\n- [y] no\n- [ ]", "<ul>\n<li class=\"task\"><input type=\"checkbox\" disabled> todo</li>\n<li class=\"task\"><input type=\"checkbox\" checked disabled> done</li>\n<li class=\"task\"><input type=\"checkbox\" checked disabled> DONE</li>\n<li>[y] no</li>\n<li>[ ]</li>\n</ul>\n"},
	{"task loose", "- [x] a\n\n- b", "<ul>\n<li class=\"task\">\n<p><input type=\"checkbox\" checked disabled> a</p>\n</li>\n<li>\n<p>b</p>\n</li>\n</ul>\n"},
	{"task with markup", "1. [ ] *see* `x`", "<ol>\n<li class=\"task\"><input type=\"checkbox\" disabled> <em>see</em> <code>x</code></li>\n</ol>\n"},

	{"table", "| a | b |\n| --- | --- |\n| 1 | 2 |", "<table>\n<thead>\n<tr>\n<th>a</th>\n<th>b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1</td>\n<td>2</td>\n</tr>\n</tbody>\n</table>\n"},
	{"table alignment", "a|b|c|d\n:-|:-:|-:|-\n1|2|3|4", "<table>\n<thead>\n<tr>\n<th align=\"left\">a</th>\n<th align=\"center\">b</th>\n<th align=\"right\">c</th>\n<th>d</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td align=\"left\">1</td>\n<td align=\"center\">2</td>\n<td align=\"right\">3</td>\n<td>4</td>\n</tr>\n</tbody>\n</table>\n"},
	{"table header only", "|a|\n|-|", "<table>\n<thead>\n<tr>\n<th>a</th>\n</tr>\n</thead>\n</table>\n"},
	{"table short and long rows", "|a|b|\n|-|-|\n|1|\n|1|2|3|", "<table>\n<thead>\n<tr>\n<th>a</th>\n<th>b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1</td>\n<td></td>\n</tr>\n<tr>\n<td>1</td>\n<td>2</td>\n</tr>\n</tbody>\n</table>\n"},
	{"table escaped pipe and inline", "|a|b|\n|-|-|\n|`x\\|y`|**c** \\| d|", "<table>\n<thead>\n<tr>\n<th>a</th>\n<th>b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td><code>x|y</code></td>\n<td><strong>c</strong> | d</td>\n</tr>\n</tbody>\n</table>\n"},
	{"table after paragraph lines", "intro\n|a|\n|-|\n|1|\n\nafter", "<p>intro</p>\n<table>\n<thead>\n<tr>\n<th>a</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1</td>\n</tr>\n</tbody>\n</table>\n<p>after</p>\n"},
	{"table ends at another block", "|a|\n|-|\n|1|\n> q", "<table>\n<thead>\n<tr>\n<th>a</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1</td>\n</tr>\n</tbody>\n</table>\n<blockquote>\n<p>q</p>\n</blockquote>\n"},
	{"table cell counts must match", "|a|b|\n|-|\n", "<p>|a|b|\n|-|</p>\n"},
	{"table bad delimiter", "|a|\n|x|", "<p>|a|\n|x|</p>\n"},
	{"table in a list", "- |a|\n  |-|\n  |1|", "<ul>\n<li>\n<table>\n<thead>\n<tr>\n<th>a</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1</td>\n</tr>\n</tbody>\n</table>\n</li>\n</ul>\n"},
}

func TestInline(t *testing.T) { run1(t, inlineCases) }

var inlineCases = []tcase{
	{"code span", "`a`", "<p><code>a</code></p>\n"},
	{"code span double", "`` a`b ``", "<p><code>a`b</code></p>\n"},
	{"code span strips one space", "`  a  `", "<p><code> a </code></p>\n"},
	{"code span all spaces kept", "`  `", "<p><code>  </code></p>\n"},
	{"code span newline", "`a\nb`", "<p><code>a b</code></p>\n"},
	{"code span escapes", "`<b>&\\`", "<p><code>&lt;b&gt;&amp;\\</code></p>\n"},
	{"code span unmatched", "``a`", "<p>``a`</p>\n"},
	{"code span length must match", "```a`` b```", "<p><code>a`` b</code></p>\n"},
	{"code span beats emphasis", "*a `*` b*", "<p><em>a <code>*</code> b</em></p>\n"},
	{"escaped backtick", "\\`a`", "<p>`a`</p>\n"},

	{"em star", "*a*", "<p><em>a</em></p>\n"},
	{"em underscore", "_a_", "<p><em>a</em></p>\n"},
	{"strong", "**a** __b__", "<p><strong>a</strong> <strong>b</strong></p>\n"},
	{"strong em", "***a***", "<p><em><strong>a</strong></em></p>\n"},
	{"nested", "*a **b** c*", "<p><em>a <strong>b</strong> c</em></p>\n"},
	{"intraword star", "a*b*c", "<p>a<em>b</em>c</p>\n"},
	{"snake case", "snake_case_words and __dunder__ init", "<p>snake_case_words and <strong>dunder</strong> init</p>\n"},
	{"snake case in emphasis", "_use my_var here_", "<p><em>use my_var here</em></p>\n"},
	{"unmatched", "*a **b", "<p>*a **b</p>\n"},
	{"space after opener", "* a*", "<ul>\n<li>a*</li>\n</ul>\n"},
	{"spaces around", "a * b * c", "<p>a * b * c</p>\n"},
	{"leftover opener", "**a*", "<p>*<em>a</em></p>\n"},
	{"leftover closer", "*a**", "<p><em>a</em>*</p>\n"},
	{"rule of three", "*a**b*", "<p><em>a**b</em></p>\n"},
	{"punctuation flanking", "*(a)*", "<p><em>(a)</em></p>\n"},
	{"strike", "~~a~~", "<p><del>a</del></p>\n"},
	{"single tilde is text", "~5 ms, ~a~", "<p>~5 ms, ~a~</p>\n"},
	{"triple tilde is text", "x ~~~a~~~", "<p>x ~~~a~~~</p>\n"},
	{"strike with emphasis", "~~*a*~~", "<p><del><em>a</em></del></p>\n"},
	{"mismatched kinds", "*a _b* c_", "<p><em>a _b</em> c_</p>\n"},
	{"many stars", "****", "<hr>\n"},
	{"stars in text", "a **** b", "<p>a **** b</p>\n"},

	{"escapes", "\\*a\\* \\_ \\\\ \\[x] \\a", "<p>*a* _ \\ [x] \\a</p>\n"},
	{"escaped delimiter", "*a\\*", "<p>*a*</p>\n"},

	{"link", "[a](http://x.com)", "<p><a href=\"http://x.com\">a</a></p>\n"},
	{"link title", "[a](/p \"t & 'u'\")", "<p><a href=\"/p\" title=\"t &amp; &#39;u&#39;\">a</a></p>\n"},
	{"link title kinds", "[a](b 'c') [d](e (f))", "<p><a href=\"b\" title=\"c\">a</a> <a href=\"e\" title=\"f\">d</a></p>\n"},
	{"link angle dest", "[a](<b c>)", "<p><a href=\"b%20c\">a</a></p>\n"},
	{"link empty dest", "[a]()", "<p><a href=\"\">a</a></p>\n"},
	{"link parens in dest", "[a](b(c)d)", "<p><a href=\"b(c)d\">a</a></p>\n"},
	{"link escaped paren", "[a](b\\)c)", "<p><a href=\"b)c\">a</a></p>\n"},
	{"link with emphasis", "[*a* **b**](c)", "<p><a href=\"c\"><em>a</em> <strong>b</strong></a></p>\n"},
	{"link code", "[`a`](b)", "<p><a href=\"b\"><code>a</code></a></p>\n"},
	{"link fragment", "[a](#sec)", "<p><a href=\"#sec\">a</a></p>\n"},
	{"link mailto", "[a](MAILTO:x@y.z)", "<p><a href=\"MAILTO:x@y.z\">a</a></p>\n"},
	{"link non-ascii", "[a](/ü)", "<p><a href=\"/%C3%BC\">a</a></p>\n"},
	{"link in link", "[a [b](c) d](e)", "<p>[a <a href=\"c\">b</a> d](e)</p>\n"},
	{"not a link", "[a] (b) [c]", "<p>[a] (b) [c]</p>\n"},
	{"reference links are text", "[a][b]\n\n[b]: /x", "<p>[a][b]</p>\n<p>[b]: /x</p>\n"},
	{"emphasis does not cross a link", "*[a*](b)", "<p>*<a href=\"b\">a*</a></p>\n"},
	{"emphasis around a link", "*[a](b)*", "<p><em><a href=\"b\">a</a></em></p>\n"},
	{"unclosed link", "[a](b", "<p>[a](b</p>\n"},
	{"link over lines", "[a\nb](c\n\"t\")", "<p><a href=\"c\" title=\"t\">a\nb</a></p>\n"},

	{"image is a link", "![alt *x*](/i.png \"t\")", "<p><a href=\"/i.png\" title=\"t\">alt <em>x</em></a></p>\n"},
	{"image in link", "[![b](/i.png)](https://x.y)", "<p><a href=\"https://x.y\">b</a></p>\n"},
	{"link in image", "![[a](b)](c)", "<p><a href=\"c\">a</a></p>\n"},
	{"bang alone", "a! ![", "<p>a! ![</p>\n"},

	{"autolink", "<https://x.y/a?b=1&c>", "<p><a href=\"https://x.y/a?b=1&amp;c\">https://x.y/a?b=1&amp;c</a></p>\n"},
	{"autolink email", "<me@x.example>", "<p><a href=\"mailto:me@x.example\">me@x.example</a></p>\n"},
	{"autolink other scheme", "<irc://x>", "<p>irc://x</p>\n"},
	{"not an autolink", "<a b> <x> a<b", "<p>&lt;a b&gt; &lt;x&gt; a&lt;b</p>\n"},

	{"bare http", "see http://x.y/p.", "<p>see <a href=\"http://x.y/p\">http://x.y/p</a>.</p>\n"},
	{"bare https paren", "(https://x.y/a_(b)) ok", "<p>(<a href=\"https://x.y/a_(b)\">https://x.y/a_(b)</a>) ok</p>\n"},
	{"bare www", "www.example.com/path, next", "<p><a href=\"http://www.example.com/path\">www.example.com/path</a>, next</p>\n"},
	{"bare link keeps underscores", "https://x.y/a_b_c*", "<p><a href=\"https://x.y/a_b_c\">https://x.y/a_b_c</a>*</p>\n"},
	{"bare link in emphasis", "*https://x.y*", "<p><em><a href=\"https://x.y\">https://x.y</a></em></p>\n"},
	{"bare link stops at <", "https://x.y<b>", "<p><a href=\"https://x.y\">https://x.y</a>&lt;b&gt;</p>\n"},
	{"bare link entity end", "https://x.y/&amp;", "<p><a href=\"https://x.y/\">https://x.y/</a>&amp;amp;</p>\n"},
	{"bare localhost", "http://localhost:8080/x", "<p><a href=\"http://localhost:8080/x\">http://localhost:8080/x</a></p>\n"},
	{"bare link mid word", "xhttp://a.b awww.c.d", "<p>xhttp://a.b awww.c.d</p>\n"},
	{"bare www alone", "www. and http://", "<p>www. and http://</p>\n"},
	{"bare underscore domain", "www.a_b.c", "<p>www.a_b.c</p>\n"},
	{"bare link in link text", "[https://a.b](https://c.d)", "<p><a href=\"https://c.d\">https://a.b</a></p>\n"},
	{"bare link in code", "`https://a.b`", "<p><code>https://a.b</code></p>\n"},

	{"entities stay text", "&amp; &copy; &#60;", "<p>&amp;amp; &amp;copy; &amp;#60;</p>\n"},
	{"nul and invalid utf-8", "a\x00b\xffc", "<p>a\uFFFDb\uFFFDc</p>\n"},
}

// Notes come from other machines: nothing in them may become markup,
// script or a link to anything but the web, mail or the page itself.
func TestSafety(t *testing.T) {
	run1(t, []tcase{
		{"script", "<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"},
		{"html block", "<div onclick=\"x\">\n\n</div>", "<p>&lt;div onclick=&quot;x&quot;&gt;</p>\n<p>&lt;/div&gt;</p>\n"},
		{"img onerror", "<img src=x onerror=alert(1)>", "<p>&lt;img src=x onerror=alert(1)&gt;</p>\n"},
		{"comment", "<!-- x -->", "<p>&lt;!-- x --&gt;</p>\n"},
		{"javascript", "[a](javascript:alert(1))", "<p>a</p>\n"},
		{"javascript mixed case", "[a](JaVaScRiPt:alert(1))", "<p>a</p>\n"},
		{"javascript with tab", "[a](<java\tscript:alert(1)>)", "<p>a</p>\n"},
		{"javascript with newline escape", "[a](<java\\\nscript:x>)", "<p>[a](&lt;java<br>\nscript:x&gt;)</p>\n"},
		{"javascript leading space", "[a]( javascript:x)", "<p>a</p>\n"},
		{"javascript control chars", "[a](<\x01java\x7fscript:x>)", "<p>a</p>\n"},
		{"javascript escaped colon", "[a](javascript\\:x)", "<p>a</p>\n"},
		{"vbscript", "[a](vbscript:x)", "<p>a</p>\n"},
		{"data", "[a](data:text/html;base64,PHNjcmlwdD4=)", "<p>a</p>\n"},
		{"file", "[a](file:///etc/passwd)", "<p>a</p>\n"},
		{"other scheme", "[a](ftp://x) [b](x-y:z)", "<p>a b</p>\n"},
		{"image data", "![pic](data:image/png;base64,AAAA)", "<p>pic</p>\n"},
		{"image javascript", "![x](javascript:alert(1))", "<p>x</p>\n"},
		{"autolink javascript", "<javascript:alert(1)>", "<p>javascript:alert(1)</p>\n"},
		{"autolink data", "<data:text/html,<script>>", "<p>&lt;data:text/html,&lt;script&gt;&gt;</p>\n"},
		{"unsafe link keeps its markup", "[*a*](javascript:x)", "<p><em>a</em></p>\n"},
		{"quote in href", "[a](x\"onmouseover=alert(1))", "<p><a href=\"x%22onmouseover=alert(1)\">a</a></p>\n"},
		{"quote in angle href", "[a](<x\" y='z'>)", "<p><a href=\"x%22%20y=&#39;z&#39;\">a</a></p>\n"},
		{"quote in title", "[a](/x \"\\\" onmouseover=\\\"alert(1)\")", "<p><a href=\"/x\" title=\"&quot; onmouseover=&quot;alert(1)\">a</a></p>\n"},
		{"angle brackets in title", "[a](/x '<script>')", "<p><a href=\"/x\" title=\"&lt;script&gt;\">a</a></p>\n"},
		{"code info", "```\"><script>\nx\n```", "<pre><code class=\"language-&quot;&gt;&lt;script&gt;\">x\n</code></pre>\n"},
		{"relative with colon later", "[a](/x:y) [b](?q=j:s) [c](./j:x)", "<p><a href=\"/x:y\">a</a> <a href=\"?q=j:s\">b</a> <a href=\"./j:x\">c</a></p>\n"},
		{"entity is text, so this is a path with a fragment", "[a](&#106;avascript:x)", "<p><a href=\"&amp;#106;avascript:x\">a</a></p>\n"},
	})
}

func TestSafeURL(t *testing.T) {
	for u, want := range map[string]bool{
		"http://x": true, "HTTPS://x": true, "mailto:a@b": true, "/p": true, "p": true, "#f": true, "": true,
		"?q": true, "//host/p": true, "./a:b": true,
		"javascript:x": false, "JAVASCRIPT:x": false, "java\tscript:x": false, " javascript:x": false,
		"java\nscript:x": false, "\x00javascript:x": false, "vbscript:x": false, "data:x": false,
		"file:x": false, "httpx:x": false, "http s:x": false, "\thttp:x": false, "mailtox:x": false, "a:b": false,
		"https\u00a0:x": false,
	} {
		if got := safeURL(u); got != want {
			t.Errorf("safeURL(%q) = %v, want %v", u, got, want)
		}
	}
}

// Deep nesting stops at maxDepth: deeper markers are text.
func TestDepthCap(t *testing.T) {
	deep := HTML(strings.Repeat(">", 100) + " x")
	if n := strings.Count(deep, "<blockquote>"); n != maxDepth {
		t.Errorf("%d block quotes, want %d", n, maxDepth)
	}
	if !strings.Contains(deep, strings.Repeat("&gt;", 100-maxDepth)) {
		t.Errorf("deeper markers are not text:\n%s", deep)
	}
	var b strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "%s- item %d\n", strings.Repeat("  ", i), i)
	}
	lists := HTML(b.String())
	if n := strings.Count(lists, "<ul>"); n != maxDepth {
		t.Errorf("%d lists, want %d", n, maxDepth)
	}
	for _, s := range []string{deep, lists} {
		if err := wellFormed(s); err != nil {
			t.Error(err)
		}
	}
}

// Hostile inputs finish in time linear in their size: each is about
// 1 MB. On the shared 2-core machine each took 0.4 s at most (most a few
// ms) while other tests ran; the limit is 2 s so that load cannot fail
// the test, while a quadratic construct would take minutes at this size.
func TestAdversarial(t *testing.T) {
	const size = 1 << 20
	rep := func(s string) string { return strings.Repeat(s, size/len(s)) }
	inputs := map[string]string{
		"stars":                rep("*"),
		"star words":           rep("*a "),
		"underscores":          rep("_"),
		"alternating":          rep("*_"),
		"strong closers":       rep("a**"),
		"rule of three":        rep("*a**"),
		"openers then closers": strings.Repeat("*a ", size/6) + strings.Repeat("a* ", size/6),
		"mixed openers":        strings.Repeat("_a *a ", size/12) + strings.Repeat("a* ", size/6),
		"tildes":               rep("~~a "),
		"open brackets":        rep("["),
		"close brackets":       rep("]"),
		"nested brackets":      strings.Repeat("[", size/2) + strings.Repeat("]", size/2),
		"bracket parens":       rep("[]("),
		"links unclosed":       rep("[a](b "),
		"titles unclosed":      rep("[a](b \"c "),
		"angle dests":          rep("[a](<b "),
		"nested parens":        "[a](" + rep("("),
		"images":               rep("!["),
		"links":                rep("[a](b) "),
		"backticks":            rep("`"),
		"backtick runs":        backtickRuns(size),
		"angles":               rep("<a"),
		"autolinks unclosed":   rep("<http://a "),
		"bare links":           rep("http://a.b "),
		"bare link parens":     "http://a.b/" + rep(")"),
		"escapes":              rep("\\"),
		"quotes":               rep(">"),
		"quote lines":          rep("> a\n"),
		"list markers":         rep("- "),
		"nested lists":         nestedLists(size),
		"list lines":           rep("- a\n"),
		"blank items":          rep("-\n"),
		"hashes":               rep("#"),
		"fences":               rep("```\n"),
		"table":                "|" + strings.Repeat("a|", 100) + "\n|" + strings.Repeat("-|", 100) + "\n" + rep("a\n"),
		"table pipes":          "a|b\n-|-\n" + rep("|"),
		"tabs":                 rep("\t"),
		"mixed":                rep("*a _b [c](d `e` ~~f <g> http://h.i **j"),
		"hard breaks":          rep("a  \n"),
		"lazy lines":           strings.Repeat("> ", maxDepth) + "a\n" + rep("b\n"),
	}
	for name, in := range inputs {
		start := time.Now()
		out := HTML(in)
		d := time.Since(start)
		t.Logf("%s: %v", name, d)
		if d > 2*time.Second {
			t.Errorf("%s: %v for %d bytes", name, d, len(in))
		}
		if len(out) > 32*len(in)+1000 {
			t.Errorf("%s: %d bytes of output for %d of input", name, len(out), len(in))
		}
		if err := wellFormed(out); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// backtickRuns is runs of 1, 2, 3, ... backticks with text between them:
// no two alike, so no code span closes and a naive search for each
// opener's closer would rescan the rest of the text.
func backtickRuns(size int) string {
	var b strings.Builder
	for n := 1; b.Len() < size; n++ {
		b.WriteString(strings.Repeat("`", n))
		b.WriteString("a")
	}
	return b.String()
}

func nestedLists(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString(strings.Repeat("  ", i%40))
		b.WriteString("- a\n")
	}
	return b.String()
}

// The package promises no work at init, because every process of the
// binary (each Claude Code hook) would pay for it: no init functions,
// and package-level variables only composite literals of constants.
func TestNoInitWork(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := goparser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name == "init" {
					t.Errorf("%s: func init", fset.Position(d.Pos()))
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, spec := range d.Specs {
					for _, v := range spec.(*ast.ValueSpec).Values {
						if !constantData(v) {
							t.Errorf("%s: a package-level variable computed at init", fset.Position(v.Pos()))
						}
					}
				}
			}
		}
	}
}

func constantData(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.CompositeLit:
		for _, el := range e.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				el = kv.Value
			}
			if !constantData(el) {
				return false
			}
		}
		return true
	}
	return false
}

func FuzzHTML(f *testing.F) {
	for _, s := range []string{
		"# h\n\npara *em* **strong** ~~del~~ `code` [l](http://x \"t\") ![i](/p) <http://a> www.b.c snake_case",
		"- a\n  - b\n\n- [x] c\n1. d\n3) e",
		"> q\n> > r\nlazy\n\n```go\ncode\n```\n\n    ind\n\n---",
		"| a | b |\n|:-:|--:|\n| `x\\|y` | *z* |\n| 1 |",
		"<script>alert(1)</script><img src=x onerror=y>[a](javascript:x)[b](<java\tscript:y>)",
		"***a* b** _a__b_ *(a)* [a [b](c)](d) ![[e](f)](g) `` ` `` \\* \\\n",
		"a  \nb\\\nc\r\nd\re\x00f\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := HTML(s)
		if err := wellFormed(out); err != nil {
			t.Fatalf("HTML(%q) = %q: %v", s, out, err)
		}
		if !utf8.ValidString(out) {
			t.Fatalf("HTML(%q) is not valid UTF-8", s)
		}
	})
}

// Tags the renderer writes, and the attributes each may carry.
var allowed = map[string][]string{
	"p": nil, "h1": nil, "h2": nil, "h3": nil, "h4": nil, "h5": nil, "h6": nil,
	"blockquote": nil, "ul": nil, "ol": {"start"}, "li": {"class"}, "pre": nil,
	"code": {"class"}, "table": nil, "thead": nil, "tbody": nil, "tr": nil,
	"th": {"align"}, "td": {"align"}, "hr": nil, "br": nil, "em": nil,
	"strong": nil, "del": nil, "a": {"href", "title"}, "input": {"type", "checked", "disabled"},
}

var inlineTags = map[string]bool{"em": true, "strong": true, "del": true, "a": true, "code": true}

// wellFormed checks rendered HTML: every '<' starts an allowed tag with
// allowed attributes, tags are closed in order (hr, br and input are
// void), no block opens inside an inline element, no link inside a link,
// every href has an allowed scheme or none, and text (attribute values
// included) holds no raw '>', quote or '&' that does not start one of
// the renderer's five entities.
func wellFormed(s string) error {
	var stack []string
	inA := false
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				return fmt.Errorf("unterminated tag at %d", i)
			}
			tag := s[i+1 : i+j]
			i += j + 1
			if name, ok := strings.CutPrefix(tag, "/"); ok {
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return fmt.Errorf("</%s> closes %v at %d", name, stack, i)
				}
				stack = stack[:len(stack)-1]
				if name == "a" {
					inA = false
				}
				continue
			}
			name, attrs, _ := strings.Cut(tag, " ")
			ok := false
			var attrNames []string
			if attrNames, ok = allowed[name]; !ok {
				return fmt.Errorf("tag <%s> at %d", tag, i)
			}
			if err := checkAttrs(name, attrs, attrNames); err != nil {
				return fmt.Errorf("<%s> at %d: %v", tag, i, err)
			}
			if !inlineTags[name] && name != "br" && name != "input" {
				for _, open := range stack {
					if inlineTags[open] {
						return fmt.Errorf("block <%s> inside <%s> at %d", name, open, i)
					}
				}
			}
			if name == "a" {
				if inA {
					return fmt.Errorf("link inside a link at %d", i)
				}
				inA = true
			}
			if name != "hr" && name != "br" && name != "input" {
				stack = append(stack, name)
			}
		case '>', '"', '\'':
			return fmt.Errorf("raw %q in text at %d", s[i], i)
		case '&':
			if err := checkEntity(s[i:]); err != nil {
				return fmt.Errorf("at %d: %v", i, err)
			}
			i++
		default:
			i++
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("left open: %v", stack)
	}
	return nil
}

func checkEntity(s string) error {
	for _, e := range []string{"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"} {
		if strings.HasPrefix(s, e) {
			return nil
		}
	}
	return fmt.Errorf("bare & in %.10q", s)
}

func checkAttrs(tag, attrs string, names []string) error {
	for attrs != "" {
		var name, value string
		eq := strings.IndexAny(attrs, "= ")
		if eq < 0 || attrs[eq] == ' ' {
			if eq < 0 {
				eq = len(attrs)
			}
			name, attrs = attrs[:eq], strings.TrimPrefix(attrs[eq:], " ")
			if name != "checked" && name != "disabled" {
				return fmt.Errorf("attribute %q without a value", name)
			}
		} else {
			name = attrs[:eq]
			rest := attrs[eq+1:]
			if !strings.HasPrefix(rest, `"`) {
				return fmt.Errorf("unquoted value of %s", name)
			}
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return fmt.Errorf("unterminated value of %s", name)
			}
			value, attrs = rest[1:1+end], strings.TrimPrefix(rest[2+end:], " ")
			if strings.ContainsAny(value, "<>'") {
				return fmt.Errorf("raw markup in %s=%q", name, value)
			}
			for k := 0; k < len(value); k++ {
				if value[k] == '&' {
					if err := checkEntity(value[k:]); err != nil {
						return err
					}
				}
			}
		}
		ok := false
		for _, n := range names {
			ok = ok || n == name
		}
		if !ok {
			return fmt.Errorf("attribute %s", name)
		}
		if tag == "a" && name == "href" && !allowedScheme(value) {
			return fmt.Errorf("href %q", value)
		}
	}
	return nil
}

// allowedScheme is the test's own view of a safe href (as written, after
// HTML decoding of the few entities the renderer writes): a scheme, if it
// has one, is http, https or mailto.
func allowedScheme(href string) bool {
	href = strings.NewReplacer("&amp;", "&", "&#39;", "'", "&quot;", `"`, "&lt;", "<", "&gt;", ">").Replace(href)
	if strings.ContainsFunc(href, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return false // the renderer percent-encodes these
	}
	i := strings.IndexAny(href, ":/?#")
	if i < 0 || href[i] != ':' {
		return true
	}
	switch strings.ToLower(href[:i]) {
	case "http", "https", "mailto":
		return true
	}
	return false
}

// Text is what a reader sees: markup read, text that looks like markup
// (raw HTML, escapes) as written.
func TestText(t *testing.T) {
	for src, want := range map[string]string{
		"## A *b* `c`\n\n- d\n- e":    "A b c d e",
		"x &amp; <y> \"z\" 'w'":       "x &amp; <y> \"z\" 'w'",
		"[link](javascript:alert(1))": "link",
	} {
		if got := strings.Join(strings.Fields(Text(src)), " "); got != want {
			t.Errorf("Text(%q) = %q, want %q", src, got, want)
		}
	}
}
