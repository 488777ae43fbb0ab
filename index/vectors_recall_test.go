package index

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
)

// TestInt8Recall measures what the 8-bit scan costs in recall@10 against
// the exact float32 ranking, alone and with the candidates NearestVectors
// looks up (max(2k, 64) for the fusion's k = 50, 64 for prompt recall's
// k = 10) scored again exactly, on two synthetic sets of 768 dimensions:
// random unit vectors (the hardest case: the ten nearest are hardly
// nearer than the rest) and clustered ones (texts on a few hundred topics,
// queries near a note, as embeddings are).
func TestInt8Recall(t *testing.T) {
	n, queries := 10000, 60
	if testing.Short() {
		n, queries = 4000, 30
	}
	const d, k = 768, 10
	for _, set := range []string{"random", "clustered"} {
		r := rand.New(rand.NewSource(11))
		vecs, qs := syntheticVectors(r, set, n, queries, d)
		w := newBlockWriter(d, n)
		for i, v := range vecs {
			w.add([16]byte{byte(i), byte(i >> 8), byte(i >> 16)}, v)
		}
		blocks := w.blocks()
		var alone, rescored, rescored64 float64
		for _, q := range qs {
			exact := make([]float32, n)
			for i, v := range vecs {
				exact[i] = dot(q, v)
			}
			want := topIndices(exact, k)
			scores, err := scanSet(newQuery8(q), blocks, len(blocks)/vfBlockSize(d), n)
			if err != nil {
				t.Fatal(err)
			}
			alone += overlap(topIndices(scores, k), want)
			for _, r := range []int{100, 64} {
				cand := topIndices(scores, r)
				re := make([]float32, len(scores))
				for i := range re {
					re[i] = float32(math.Inf(-1))
				}
				for _, i := range cand {
					re[i] = exact[i]
				}
				if got := overlap(topIndices(re, k), want); r == 100 {
					rescored += got
				} else {
					rescored64 += got
				}
			}
		}
		nq := float64(len(qs))
		t.Logf("%s, %d vectors of %d dims: recall@10 of the 8-bit scan %.4f; with the best 100 / 64 scored again exactly %.4f / %.4f",
			set, n, d, alone/nq, rescored/nq, rescored64/nq)
		if rescored/nq < 0.99 || rescored64/nq < 0.99 || alone/nq < 0.9 {
			t.Errorf("%s: recall@10 %.4f alone, %.4f / %.4f rescored", set, alone/nq, rescored/nq, rescored64/nq)
		}
	}
}

// overlap is the share of want in got.
func overlap(got, want []int32) float64 {
	hit := 0
	for _, i := range want {
		if slices.Contains(got, i) {
			hit++
		}
	}
	return float64(hit) / float64(len(want))
}

// syntheticVectors makes n unit vectors and the queries of a set: random,
// or clustered around n/50 topics, each query a note's vector with noise
// as long as itself added (a cosine of about 0.7 to it, as a paraphrase
// has with nomic-embed-text).
func syntheticVectors(r *rand.Rand, set string, n, queries, d int) (vecs, qs [][]float32) {
	gauss := func(scale float64) []float32 {
		v := make([]float32, d)
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale)
		}
		return v
	}
	norm := func(v []float32) []float32 {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		for i := range v {
			v[i] /= float32(math.Sqrt(s))
		}
		return v
	}
	add := func(a, b []float32) []float32 {
		for i := range a {
			a[i] += b[i]
		}
		return a
	}
	switch set {
	case "random":
		for i := 0; i < n; i++ {
			vecs = append(vecs, norm(gauss(1)))
		}
		for i := 0; i < queries; i++ {
			qs = append(qs, norm(gauss(1)))
		}
	case "clustered":
		var topics [][]float32
		for i := 0; i < n/50; i++ {
			topics = append(topics, norm(gauss(1)))
		}
		for i := 0; i < n; i++ {
			t := slices.Clone(topics[r.Intn(len(topics))])
			vecs = append(vecs, norm(add(t, norm(gauss(1)))))
		}
		for i := 0; i < queries; i++ {
			q := slices.Clone(vecs[r.Intn(n)])
			qs = append(qs, norm(add(q, norm(gauss(1)))))
		}
	default:
		panic(fmt.Sprint("no set ", set))
	}
	return vecs, qs
}
