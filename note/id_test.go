package note

import (
	"encoding/hex"
	"testing"
)

// IDFromHash must give the ids gitsync gave conflict copies before it
// moved here (vectors from that code): machines of two versions merging
// one conflict must name its copy alike.
func TestIDFromHashKeepsTheConflictCopyIDs(t *testing.T) {
	for in, want := range map[string]string{
		"0123456789abcdef0123456789abcdef01234567": "04HMASW9NF6YY0938NKRKAYDXW",
		"ffffffffffffffffffffffffffffffffffffffff": "ZZZZZZZZZZZZZZZZZZZZZZZZZW",
	} {
		sum, _ := hex.DecodeString(in)
		if got := IDFromHash(sum); got != want || !ValidID(got) {
			t.Errorf("IDFromHash(%s) = %s, want %s", in, got, want)
		}
	}
}
