package fts5token

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// benchWords is ordinary English, most frequent first.
var benchWords = strings.Fields(`
the of and to a in is that it was for on are as with his they be at one
have this from or had by not word but what some we can out other were all
there when up use your how said an each she which do their time if will
way about many then them write would like so these her long make thing see
him two has look more day could go come did number sound no most people my
over know water than call first who may down side been now find any new
work part take get place made live where after back little only round man
year came show every good me give our under name very through just form
sentence great think say help low line differ turn cause much mean before
move right boy old too same tell does set three want air well also play
small end put home read hand port large spell add even land here must big
high such follow act why ask men change went light kind off need house
picture try us again animal point mother world near build self earth father
running jumped generalization hopefulness relational conditional happily
`)

// prose builds about n bytes of sentences from benchWords with a Zipf-like
// word choice, capitals and punctuation.
func prose(n int) string {
	rng := rand.New(rand.NewPCG(7, 8))
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(benchWords)-1))
	var b strings.Builder
	b.Grow(n + 64)
	for b.Len() < n {
		words := 5 + rng.IntN(15)
		for i := range words {
			w := benchWords[zipf.Uint64()]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			b.WriteString(w)
			switch {
			case i == words-1:
				b.WriteString(". ")
			case rng.IntN(10) == 0:
				b.WriteString(", ")
			default:
				b.WriteByte(' ')
			}
		}
		if rng.IntN(8) == 0 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

func BenchmarkEach(b *testing.B) {
	text := prose(1 << 20)
	ntok := 0
	Each(text, func([]byte) { ntok++ })
	sink := 0
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Each(text, func(tok []byte) { sink += len(tok) })
	}
	b.ReportMetric(float64(ntok)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	if sink == 0 {
		b.Fatal("no tokens")
	}
}
