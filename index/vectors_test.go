package index

import (
	"cmp"
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/note"
)

// unitVec is a deterministic unit vector of d dimensions for seed.
func unitVec(seed int64, d int) []float32 {
	r := rand.New(rand.NewSource(seed))
	v := make([]float32, d)
	var n float64
	for i := range v {
		v[i] = float32(r.NormFloat64())
		n += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v
}

// putNotes indexes notes and gives each the vector of its position.
// applyNotes indexes notes (file stat data made up).
func applyNotes(t *testing.T, ix *Index, notes []*note.Note) {
	t.Helper()
	var changes []Change
	for _, n := range notes {
		changes = append(changes, Change{File: File{Path: note.TreeDir(n.Scope) + "/" + n.RelPath(), Size: 1, MtimeNS: 1, Hash: "h"}, Note: n})
	}
	if _, err := ix.Apply(ctx, changes); err != nil {
		t.Fatal(err)
	}
}

// numberedNotes is n semantic notes titled "note i" with body "body i".
func numberedNotes(n int) []*note.Note {
	notes := make([]*note.Note, n)
	for i := range notes {
		notes[i] = mk("semantic", fmt.Sprintf("note %d", i), fmt.Sprintf("body %d", i))
	}
	return notes
}

func putNotes(t *testing.T, ix *Index, model string, notes []*note.Note, d int) {
	t.Helper()
	applyNotes(t, ix, notes)
	vecs := map[string][]float32{}
	for i, n := range notes {
		vecs[EmbedHash(n.Title, n.Body, n.Tags)] = unitVec(int64(i), d)
	}
	if err := ix.PutVectors(ctx, model, vecs); err != nil {
		t.Fatal(err)
	}
}

func TestNearestVectorsIsTheExactRanking(t *testing.T) {
	ix := openTemp(t)
	const d = 24
	notes := numberedNotes(300)
	putNotes(t, ix, "m", notes, d)
	q := unitVec(1000, d)
	hits, cos, err := ix.NearestVectors(ctx, "m", q, Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	// The expected ranking, by brute force in float64.
	want := exactCosines(notes, q, d)
	if len(hits) != 10 {
		t.Fatalf("%d hits", len(hits))
	}
	for i, h := range hits {
		if h.ID != want[i].id || math.Abs(cos[i]-want[i].cos) > 1e-5 {
			t.Fatalf("rank %d: %s %.6f, want %s %.6f", i+1, h.ID, cos[i], want[i].id, want[i].cos)
		}
	}
}

// A filter that only notes far down the ranking pass is answered by
// reading further, not with fewer hits.
func TestNearestVectorsNarrowFilterReadsDeeper(t *testing.T) {
	ix := openTemp(t)
	const d = 16
	var notes []*note.Note
	for i := 0; i < 2000; i++ {
		n := mk("semantic", fmt.Sprintf("note %d", i), fmt.Sprintf("body %d", i))
		if i%400 == 7 {
			n.Project = "tiny"
		}
		notes = append(notes, n)
	}
	putNotes(t, ix, "m", notes, d)
	hits, _, err := ix.NearestVectors(ctx, "m", unitVec(99999, d), Filter{Project: "tiny"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 5 {
		t.Fatalf("%d hits for a project of 5 notes", len(hits))
	}
	for _, h := range hits {
		if h.Project != "tiny" {
			t.Fatalf("hit of project %q", h.Project)
		}
	}
}

// A process holding vectors in memory sees what another process wrote,
// and a superseded note leaves the ranking.
func TestNearestVectorsSeesOtherWriters(t *testing.T) {
	p := filepath.Join(t.TempDir(), "index.db")
	a, _, err := Open(ctx, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _, err := Open(ctx, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const d = 8
	first := mk("semantic", "first", "one")
	putNotes(t, a, "m", []*note.Note{first}, d)
	q := unitVec(5, d)
	if hits, _, err := a.NearestVectors(ctx, "m", q, Filter{}, 5); err != nil || len(hits) != 1 {
		t.Fatalf("%v %v", hits, err)
	}
	second := mk("semantic", "second", "two")
	upsert(t, b, second)
	if err := b.PutVectors(ctx, "m", map[string][]float32{EmbedHash(second.Title, second.Body, second.Tags): q}); err != nil {
		t.Fatal(err)
	}
	hits, cos, err := a.NearestVectors(ctx, "m", q, Filter{}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].ID != second.ID || math.Abs(cos[0]-1) > 1e-6 {
		t.Fatalf("after another writer: %v %v", ids(hits), cos)
	}
	third := mk("semantic", "third", "three")
	third.Supersedes = []string{second.ID}
	upsert(t, b, third)
	if hits, _, _ = a.NearestVectors(ctx, "m", q, Filter{}, 5); slices.Contains(ids(hits), second.ID) {
		t.Fatalf("a superseded note ranked: %v", ids(hits))
	}
}

// Vectors kept in an index of the version before the generations were
// (go-7) are still found after the upgrade rebuilds it.
func TestVectorsSurviveTheUpgrade(t *testing.T) {
	p := filepath.Join(t.TempDir(), "index.db")
	ix, _, err := Open(ctx, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := mk("semantic", "kept", "vector")
	putNotes(t, ix, "m", []*note.Note{n}, 8)
	// The go-7 layout: no generations, vectors WITHOUT ROWID.
	for _, q := range []string{
		`DROP TABLE vector_models`,
		`ALTER TABLE vectors RENAME TO v8`,
		`CREATE TABLE vectors (hash TEXT NOT NULL, model TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (hash, model)) WITHOUT ROWID`,
		`INSERT INTO vectors SELECT hash, model, vec FROM v8`,
		`DROP TABLE v8`,
	} {
		if _, err := ix.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	ix.SetMeta(ctx, metaSchema, "go-7")
	ix.Close()
	ix, fresh, err := Open(ctx, p, Options{})
	if err != nil || !fresh {
		t.Fatalf("fresh=%v err=%v", fresh, err)
	}
	defer ix.Close()
	upsert(t, ix, n) // what the rebuild does
	hits, _, err := ix.NearestVectors(ctx, "m", unitVec(0, 8), Filter{}, 5)
	if err != nil || len(hits) != 1 {
		t.Fatalf("after the upgrade: %v %v", hits, err)
	}
	var def string
	ix.db.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'vectors'`).Scan(&def)
	if strings.Contains(def, "WITHOUT ROWID") {
		t.Errorf("vectors kept the go-7 table: %s", def)
	}
}

func TestTopIndicesAndDot(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for trial := 0; trial < 200; trial++ {
		n := r.Intn(300) + 1
		scores := make([]float32, n)
		for i := range scores {
			scores[i] = float32(r.Intn(20)) // many ties
		}
		m := r.Intn(n) + 1
		all := make([]int32, n)
		for i := range all {
			all[i] = int32(i)
		}
		slices.SortStableFunc(all, func(a, b int32) int { return cmp.Compare(float64(scores[b]), float64(scores[a])) })
		if got := topIndices(scores, m); !slices.Equal(got, all[:m]) {
			t.Fatalf("top %d of %v:\n got %v\nwant %v", m, scores, got, all[:m])
		}
		a, b := unitVec(int64(trial), trial%37), unitVec(int64(trial+1), trial%37)
		var want float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
		}
		if got := dot(a, b); math.Abs(float64(got)-want) > 1e-5 {
			t.Fatalf("dot of %d dims: %v, want %v", len(a), got, want)
		}
	}
}
