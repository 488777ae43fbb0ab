package fakeembed

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Options shape the server.
type Options struct {
	Dim      int           // vector size (0: 64)
	Model    string        // the only model it has (""; any)
	Delay    time.Duration // before each answer
	Key      string        // bearer key /v1 demands ("": none)
	WrongDim bool          // answer vectors one longer than asked, from the second on
}

// Server is a running fake.
type Server struct {
	URL      string
	Requests atomic.Int64
	opts     Options
}

// synonyms map words to the concept they stand for; words not here are
// their own concept.
var synonyms = map[string]string{}

func init() {
	for concept, words := range map[string]string{
		"car":      "car automobile vehicle auto",
		"fix":      "fix repair mend patch",
		"fast":     "fast quick rapid speedy",
		"slow":     "slow sluggish laggy lagging",
		"database": "database db datastore postgres sqlite",
		"error":    "error failure fault crash",
		"deploy":   "deploy release ship rollout",
		"test":     "test tests testing check spec",
		"config":   "config configuration settings setup",
		"cache":    "cache caching memoize",
		"big":      "big large huge",
		"small":    "small tiny little",
		"start":    "start begin launch boot",
		"stop":     "stop halt end shutdown",
		"user":     "user person customer",
		"money":    "money cost price budget",
		"memory":   "memory ram",
		"network":  "network net connection socket",
		"secret":   "secret password token credential",
		"log":      "log logs logging trace",
	} {
		for _, w := range strings.Fields(words) {
			synonyms[w] = concept
		}
	}
}

// stopwords carry no meaning here.
var stopwords = map[string]bool{"the": true, "a": true, "an": true, "is": true, "are": true, "of": true, "to": true,
	"in": true, "on": true, "and": true, "or": true, "why": true, "what": true, "how": true, "it": true, "its": true}

// Vector is the server's embedding of text (unit length).
func Vector(text string, dim int) []float32 {
	v := make([]float32, dim)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
		if stopwords[w] {
			continue
		}
		c := w
		if s, ok := synonyms[w]; ok {
			c = s
		}
		for k := 0; k < 3; k++ {
			h := fnv.New64a()
			fmt.Fprintf(h, "%s#%d", c, k)
			x := h.Sum64()
			sign := float32(1)
			if x&1 == 1 {
				sign = -1
			}
			v[(x>>1)%uint64(dim)] += sign
		}
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n > 0 {
		inv := float32(1 / math.Sqrt(n))
		for i := range v {
			v[i] *= inv
		}
	}
	return v
}

// Start runs a fake on 127.0.0.1 until the test ends.
func Start(t testing.TB, opts Options) *Server {
	s, stop := Serve(opts)
	t.Cleanup(stop)
	return s
}

// Serve runs a fake on 127.0.0.1 until stop is called: for the benchmark
// harness, which has no test to end.
func Serve(opts Options) (s *Server, stop func()) {
	if opts.Dim <= 0 {
		opts.Dim = 64
	}
	s = &Server{opts: opts}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = srv.URL
	return s, srv.Close
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	if s.opts.Delay > 0 {
		select {
		case <-time.After(s.opts.Delay):
		case <-r.Context().Done():
			return
		}
	}
	openai := r.URL.Path == "/v1/embeddings"
	if !openai && r.URL.Path != "/api/embed" {
		http.NotFound(w, r)
		return
	}
	if openai && s.opts.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.Key {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]string{"message": "Incorrect API key provided", "type": "invalid_request_error"}})
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "bad request: " + err.Error()})
		return
	}
	if s.opts.Model != "" && req.Model != s.opts.Model {
		if openai {
			writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]string{"message": fmt.Sprintf("The model `%s` does not exist", req.Model), "type": "invalid_request_error"}})
		} else {
			writeJSON(w, http.StatusNotFound, map[string]any{"error": fmt.Sprintf("model %q not found, try pulling it first", req.Model)})
		}
		return
	}
	vecs := make([][]float32, len(req.Input))
	for i, text := range req.Input {
		dim := s.opts.Dim
		if s.opts.WrongDim && i > 0 {
			dim++
		}
		vecs[i] = Vector(text, dim)
	}
	if openai {
		data := make([]map[string]any, len(vecs))
		for i, v := range vecs {
			data[len(vecs)-1-i] = map[string]any{"object": "embedding", "index": i, "embedding": v} // out of order, as servers may answer
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": req.Model})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": req.Model, "embeddings": vecs})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
