package consolidate

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// fakeOpenAI is an OpenAI-compatible chat completions server with scripted
// replies, one per request in order; it records what it was sent.
type fakeOpenAI struct {
	mu       sync.Mutex
	replies  []func(w http.ResponseWriter)
	requests []map[string]any
	auth     []string
}

func content(text string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}}})
	}
}

func refusal(why string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": nil, "refusal": why}, "finish_reason": "stop"}}})
	}
}

func status(code int, body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) { w.WriteHeader(code); io.WriteString(w, body) }
}

func (f *fakeOpenAI) start(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		var reply func(http.ResponseWriter)
		if len(f.replies) > 0 {
			reply, f.replies = f.replies[0], f.replies[1:]
		}
		f.mu.Unlock()
		if reply == nil {
			status(500, "no scripted reply")(w)
			return
		}
		reply(w)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// userContent is the user message of request i.
func (f *fakeOpenAI) userContent(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	msgs := f.requests[i]["messages"].([]any)
	return msgs[1].(map[string]any)["content"].(string)
}
