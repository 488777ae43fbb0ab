//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Reply is one scripted model turn: text, or a tool call.
type Reply struct {
	Text    string
	Tool    string
	ToolArg map[string]any
}

// fakeAPI stands in for the Anthropic Messages API: it logs every request
// body and answers model turns from a script (the last reply repeats),
// streaming server-sent events as Claude Code expects.
type fakeAPI struct {
	URL string
	srv *http.Server
	mu  sync.Mutex
	log []string
	i   int
	scr []Reply
}

func startFakeAPI(t *testing.T, script ...Reply) *fakeAPI {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeAPI{URL: "http://" + ln.Addr().String(), scr: script}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve)}
	go f.srv.Serve(ln)
	t.Cleanup(func() { f.srv.Close() })
	return f
}

// Requests returns the logged request bodies.
func (f *fakeAPI) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func (f *fakeAPI) next(isTurn bool) Reply {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !isTurn || len(f.scr) == 0 {
		return Reply{Text: "ok"}
	}
	r := f.scr[min(f.i, len(f.scr)-1)]
	f.i++
	return r
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	f.mu.Lock()
	f.log = append(f.log, r.URL.Path+" "+string(body))
	f.mu.Unlock()
	if strings.Contains(r.URL.Path, "count_tokens") {
		writeJSON(w, map[string]any{"input_tokens": 10})
		return
	}
	var req struct {
		Model    string            `json:"model"`
		Stream   bool              `json:"stream"`
		Messages []json.RawMessage `json:"messages"`
	}
	json.Unmarshal(body, &req)
	rep := f.next(len(req.Messages) > 0)
	var blocks []map[string]any
	stop := "end_turn"
	if rep.Tool != "" {
		f.mu.Lock()
		id := fmt.Sprintf("toolu_%d", f.i)
		f.mu.Unlock()
		blocks = []map[string]any{{"type": "tool_use", "id": id, "name": rep.Tool, "input": rep.ToolArg}}
		stop = "tool_use"
	} else {
		blocks = []map[string]any{{"type": "text", "text": rep.Text}}
	}
	if !req.Stream {
		writeJSON(w, map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": req.Model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 5}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	ev := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if fl != nil {
			fl.Flush()
		}
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_fake", "type": "message",
		"role": "assistant", "model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}})
	for i, b := range blocks {
		if b["type"] == "text" {
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		} else {
			in, _ := json.Marshal(b["input"])
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 5}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
