package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Config names an embedding server.
type Config struct {
	Kind      string        // "ollama" or "openai"
	URL       string        // the server's base URL, e.g. http://127.0.0.1:11434
	Model     string        // e.g. nomic-embed-text
	APIKeyEnv string        // environment variable with a bearer key ("" for none)
	Timeout   time.Duration // per request (0: 10 s)
	Batch     int           // texts per request (0: 32)
}

// Client embeds texts with one server and model.
type Client struct {
	c    Config
	http *http.Client
}

// New checks c and returns its client.
func New(c Config) (*Client, error) {
	c.Kind = strings.ToLower(strings.TrimSpace(c.Kind))
	if c.Kind != "ollama" && c.Kind != "openai" {
		return nil, fmt.Errorf("embedder kind %q is not ollama or openai", c.Kind)
	}
	if strings.TrimSpace(c.Model) == "" {
		return nil, errors.New("embedder has no model")
	}
	u, err := url.Parse(strings.TrimRight(c.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("embedder url %q is not an http(s) URL", c.URL)
	}
	c.URL = u.String()
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Batch <= 0 {
		c.Batch = 32
	}
	return &Client{c: c, http: &http.Client{}}, nil
}

// Model names the model, which keys the vectors it computed.
func (cl *Client) Model() string { return cl.c.Kind + ":" + cl.c.Model }

// Embed returns one unit-length vector per text, in order.
func (cl *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += cl.c.Batch {
		batch := texts[start:min(start+cl.c.Batch, len(texts))]
		vs, err := cl.request(ctx, batch)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	dim := 0
	for i, v := range out {
		if len(v) == 0 {
			return nil, fmt.Errorf("embedder at %s returned an empty vector", cl.c.URL)
		}
		if i == 0 {
			dim = len(v)
		} else if len(v) != dim {
			return nil, fmt.Errorf("embedder at %s returned vectors of %d and %d dimensions", cl.c.URL, dim, len(v))
		}
		Normalize(v)
	}
	return out, nil
}

func (cl *Client) request(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, cl.c.Timeout)
	defer cancel()
	path := "/api/embed"
	if cl.c.Kind == "openai" {
		path = "/v1/embeddings"
	}
	body, _ := json.Marshal(map[string]any{"model": cl.c.Model, "input": texts})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.c.URL+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embedder at %s: %w", cl.c.URL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if cl.c.APIKeyEnv != "" {
		if key := os.Getenv(cl.c.APIKeyEnv); key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	}
	resp, err := cl.http.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("embedder at %s did not answer within %s", cl.c.URL, cl.c.Timeout)
		}
		return nil, fmt.Errorf("embedder at %s is not answering: %w", cl.c.URL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("embedder at %s: read the answer: %w", cl.c.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("embedder at %s: model %s: %s", cl.c.URL, cl.c.Model, serverMessage(resp.Status, data))
	}
	var vs [][]float32
	if cl.c.Kind == "ollama" {
		var r struct {
			Embeddings [][]float32 `json:"embeddings"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("embedder at %s: the answer is not Ollama's: %w", cl.c.URL, err)
		}
		vs = r.Embeddings
	} else {
		var r struct {
			Data []struct {
				Index     int       `json:"index"`
				Embedding []float32 `json:"embedding"`
			} `json:"data"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("embedder at %s: the answer is not OpenAI's embeddings: %w", cl.c.URL, err)
		}
		vs = make([][]float32, len(r.Data))
		for _, d := range r.Data {
			if d.Index < 0 || d.Index >= len(vs) {
				return nil, fmt.Errorf("embedder at %s: answer index %d out of range", cl.c.URL, d.Index)
			}
			vs[d.Index] = d.Embedding
		}
	}
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("embedder at %s returned %d vectors for %d texts", cl.c.URL, len(vs), len(texts))
	}
	return vs, nil
}

// serverMessage is the error a server gave: Ollama's {"error": "..."},
// OpenAI's {"error": {"message": "..."}}, else the status and body.
func serverMessage(status string, data []byte) string {
	var o struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &o) == nil && len(o.Error) > 0 {
		var s string
		if json.Unmarshal(o.Error, &s) == nil {
			return s
		}
		var m struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(o.Error, &m) == nil && m.Message != "" {
			return m.Message
		}
	}
	msg := strings.TrimSpace(string(data))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return strings.TrimSpace(status + " " + msg)
}

// Normalize scales v to unit length in place (cosine is then a dot
// product); a zero vector stays zero.
func Normalize(v []float32) {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= inv
	}
}

// Cosine is the cosine of two unit vectors.
func Cosine(a, b []float32) float32 {
	var s float32
	for i := range min(len(a), len(b)) {
		s += a[i] * b[i]
	}
	return s
}
