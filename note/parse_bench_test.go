package note

import (
	"testing"
	"time"
)

// BenchmarkParse reads a note in the form Marshal writes, the common case
// of a reindex.
func BenchmarkParse(b *testing.B) {
	n := New(TypeSemantic, "Mike bavintri fiwe nekeva gohuxo and", "Thing to token shiclare of plosonu lizavamo in to the plokeli.", time.Date(2025, 1, 1, 0, 0, 1, 0, time.UTC))
	n.Project, n.MachineID, n.Tags = "github.com/example/project15", "bench", []string{"kalovin", "deploy", "thread"}
	data := Marshal(n)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
