package claudecode

import (
	"math/rand"
	"strings"
	"testing"
)

// redactFragments are pieces the idempotence test strings together: a
// sample of every pattern, the key=value and URL forms with their
// prefixes split off, earlier redactions, quotes and separators.
var redactFragments = []string{
	// every secret pattern
	"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----",
	"-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----",
	"AKIAIOSFODNN7EXAMPLE", "ASIAIOSFODNN7EXAMPLE", "AKIA",
	"sk-ant-api03-abcdefghijklmnopqrstuvwxyz-0123456789", "sk-ant-",
	"sk-proj-abcdefghijklmnopqrstuvwxyz012345", "rk-abcdefghijklmnopqrstuvwxyz", "sk-",
	"sk_live_abcdefghijklmnop1234", "pk_test_abcdefghijklmnop1234",
	"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_",
	"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS",
	"glpat-abcdefghijklmnopqrst", "xoxb-1234567890-abcdefghij",
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "eyJ",
	"Bearer abcdefghijklmnop123", "Bearer ", "bearer\t", "Bearer abcdefghijklmnop==",
	// URL credentials
	"https://bob:pa55@example.com/repo.git", "https://bob:", "ssh://git:", "x://token:", "@example.com", "://", "@",
	// key=value forms
	"password=hunter2", "token=", "token: ", `"token": `, `"api_key":"`, "'secret'=", "DEEPSEEK_API_KEY=",
	"my_secret: ", "client-secret=", "credentials:", "Authorization: ", "auth_token = ", "pwd=",
	// earlier redactions and their neighbours
	Redacted, "[REDACTED", "REDACTED]", "[", "]", `"` + Redacted + `"`, "'" + Redacted + "'",
	// words, quotes, separators
	"hunter2", "abcdefghijklmnopqrstuvwxyz", "0123456789", "abc", "x", "-", "_", ".", "=", ":",
	`"`, "'", " ", "\n", "\t", ",", ";", "}", ")", "/", "~", "+", "é",
}

// TestRedactIsIdempotent: redacting twice gives what redacting once
// gave, for generated strings made of every pattern and its parts.
func TestRedactIsIdempotent(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := 0; i < n; i++ {
		var b strings.Builder
		for k := 1 + r.Intn(8); k > 0; k-- {
			b.WriteString(redactFragments[r.Intn(len(redactFragments))])
		}
		in := b.String()
		once := Redact(in)
		if twice := Redact(once); twice != once {
			t.Fatalf("Redact is not idempotent on %q:\nonce  %q\ntwice %q", in, once, twice)
		}
	}
}

// FuzzRedactIdempotent is the same property for the fuzzer (`make fuzz`
// does not run it; `go test` runs its seeds).
func FuzzRedactIdempotent(f *testing.F) {
	for _, s := range []string{
		"token=[REDACTED]", "token: Bearer abcdefghijklmnop123", "api_key=sk-proj-abcdefghijklmnopqrstuvwxyz012345",
		"https://token:abc@example.com", `s://u:token="a b"@h`, "x://token:,abc@h", "x://u:token=a/b,c@h", "password=hunter2", `{"password": "[REDACTED]"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		once := Redact(in)
		if twice := Redact(once); twice != once {
			t.Fatalf("Redact(%q) = %q, again %q", in, once, twice)
		}
	})
}

// TestRedactKeepsEarlierRedactions: a value that is, or holds, an
// earlier redaction is redacted once, with no stray "]".
func TestRedactKeepsEarlierRedactions(t *testing.T) {
	cases := map[string]string{
		`token=[REDACTED]`: `token=[REDACTED]`,
		`api_key=sk-proj-abcdefghijklmnopqrstuvwxyz012345`:         `api_key=[REDACTED]`,
		`token: Bearer abcdefghijklmnop123`:                        `token: [REDACTED]`,
		`password=[abc]`:                                           `password=[REDACTED]`,
		`secret=abc.ghp_abcdefghijklmnopqrstuvwxyz0123456789 next`: `secret=[REDACTED] next`,
		`https://token:abc@example.com/x`:                          `https://token:[REDACTED]@example.com/x`,
		`x://token:,abc@h`:                                         `x://token:[REDACTED]@h`,
		`x://u:token=a/b,c@h`:                                      `x://u:[REDACTED]@h`,
		`https://bob:[REDACTED]@example.com/repo.git`:              `https://bob:[REDACTED]@example.com/repo.git`,
		`x_-secret=abc`:                                            `x_-secret=[REDACTED]`,
	}
	for in, want := range cases {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
