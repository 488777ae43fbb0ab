package claudecode

import (
	"regexp"
	"strings"
	"sync"
)

// Redacted replaces a secret.
const Redacted = "[REDACTED]"

// Patterns for secrets with a recognisable shape. Each must not match an
// ordinary word, a git SHA or a ULID (see the table test).
var secretPatterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----`),
		regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`),                                      // AWS access key id
		regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_\-]{20,}`),                                       // Anthropic
		regexp.MustCompile(`\b(?:sk|rk|pk)-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}`),              // OpenAI and similar
		regexp.MustCompile(`\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b`),                    // Stripe
		regexp.MustCompile(`\bgh[posru]_[A-Za-z0-9]{30,}\b`),                                     // GitHub
		regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{40,}\b`),                                   // GitHub fine-grained
		regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`),                                        // GitLab
		regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`),                                   // Slack
		regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`), // JWT
		regexp.MustCompile(`(?i)\bBearer\s+[A-Za-z0-9._~+/\-]{12,}=*`),
	}
})

// Credentials inside URLs: scheme://user:password@host keeps the user.
var urlCreds = lazyRegexp(`\b([a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+):[^\s@/]+@`)

// key=value, key: value and "key": "value" forms for names that hold
// secrets. The JSON form is the one the Python tool missed. An unquoted
// value takes a bracketed run ("[abc]", an earlier "[REDACTED]") whole:
// stopping at its "]" left "[REDACTED]]" behind.
var kvSecret = lazyRegexp(`(?i)(["']?)\b([A-Za-z0-9]*[_\-.]?)(password|passwd|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|client[_\-]?secret|auth[_\-]?token|credentials?)(["']?)(\s*[:=]\s*)("[^"\n]*"|'[^'\n]*'|(?:\[[^\s\]]*\]|[^\s,;}\)\]])+)`)

// Redact masks secrets in text before it is written anywhere. It is
// idempotent: Redact(Redact(x)) == Redact(x) (TestRedactIsIdempotent), so
// text captured twice, or quoting an earlier redaction, is not mangled.
// URL credentials are masked before key=value (so "https://token:x@host"
// keeps its host) and again after it: a value redacted inside a URL
// ("u:token="a b"@h", "u:token=a/b,c@h") becomes a URL password only
// then, and was masked again by a second pass.
func Redact(text string) string {
	for _, re := range secretPatterns() {
		text = re.ReplaceAllString(text, Redacted)
	}
	text = urlCreds().ReplaceAllString(text, "$1:"+Redacted+"@")
	text = maskValues(text)
	return urlCreds().ReplaceAllString(text, "$1:"+Redacted+"@")
}

// maskValues replaces the value of every kvSecret match, keeping the key,
// quotes and separator as they were. It works on the match's own
// submatch indices: matching the match again, on its own, lost a leading
// "-" or "." of the key ("\b" differs at the start of a string), which
// joined two words and let another pattern match on a second pass.
func maskValues(text string) string {
	var b strings.Builder
	last := 0
	for _, m := range kvSecret().FindAllStringSubmatchIndex(text, -1) {
		vs, ve := m[12], m[13]
		val := text[vs:ve]
		if strings.HasPrefix(val, Redacted) || val == `"`+Redacted+`"` || val == "'"+Redacted+"'" {
			continue // already masked: by an earlier pass, or by a URL or pattern above
		}
		q := ""
		if val[0] == '"' || val[0] == '\'' {
			q = val[:1]
		}
		b.WriteString(text[last:vs])
		b.WriteString(q + Redacted + q)
		last = ve
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}
