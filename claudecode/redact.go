package claudecode

import "regexp"

// Redacted replaces a secret.
const Redacted = "[REDACTED]"

// Patterns for secrets with a recognisable shape. Each must not match an
// ordinary word, a git SHA or a ULID (see the table test).
var secretPatterns = []*regexp.Regexp{
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

// Credentials inside URLs: scheme://user:password@host keeps the user.
var urlCreds = regexp.MustCompile(`\b([a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+):[^\s@/]+@`)

// key=value, key: value and "key": "value" forms for names that hold
// secrets. The JSON form is the one the Python tool missed.
var kvSecret = regexp.MustCompile(`(?i)(["']?)\b([A-Za-z0-9]*[_\-.]?)(password|passwd|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|client[_\-]?secret|auth[_\-]?token|credentials?)(["']?)(\s*[:=]\s*)("[^"\n]*"|'[^'\n]*'|[^\s,;}\)\]]+)`)

// Redact masks secrets in text before it is written anywhere.
func Redact(text string) string {
	for _, re := range secretPatterns {
		text = re.ReplaceAllString(text, Redacted)
	}
	text = urlCreds.ReplaceAllString(text, "$1:"+Redacted+"@")
	return kvSecret.ReplaceAllStringFunc(text, func(m string) string {
		g := kvSecret.FindStringSubmatch(m)
		val := g[6]
		if val == Redacted || val == `"`+Redacted+`"` || val == "'"+Redacted+"'" {
			return m
		}
		q := ""
		if len(val) > 0 && (val[0] == '"' || val[0] == '\'') {
			q = val[:1]
		}
		return g[1] + g[2] + g[3] + g[4] + g[5] + q + Redacted + q
	})
}
