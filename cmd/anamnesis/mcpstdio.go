package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpMaxLine bounds one inbound JSON-RPC line. The largest legitimate
// line is a memory_write or memory_resolve of a note body at its limit
// (note.MaxBody, just under 1 MiB), which JSON may escape to six times
// its size (\u00XX); 8 MiB holds that with room. It stays well under the
// SDK's own frame limit (mcp.DefaultMaxLineLength, 16 MiB), so no line the
// filter passes on can trip the SDK's reader, which ends the session.
const mcpMaxLine = 8 << 20

// mcpMaxBatch bounds the messages of one JSON-RPC batch: each request
// in it runs at once, and no client needs more.
const mcpMaxBatch = 64

// batchVersion is the one MCP revision with JSON-RPC batches: added in
// 2025-03-26, removed in 2025-06-18 ("Remove support for JSON-RPC
// batching", that revision's changelog).
const batchVersion = "2025-03-26"

// tolerantStdio is the MCP stdio transport with a filter in front of the
// SDK. The SDK's reader ends the whole session at the first line it
// cannot take (not JSON, not a JSON-RPC message, a frame past its limit,
// or a batch under a revision without batches), and its own batch support
// counts a notification as a request awaiting an answer (the batch is
// never answered, and the next batch with a notification ends the
// session). So the filter answers every line the SDK cannot take itself,
// as JSON-RPC says (-32700 parse error, -32600 invalid request, id null),
// and never hands the SDK a batch: where batches are part of the
// protocol it passes the members on one by one and gathers their
// answers into one array.
func tolerantStdio(in io.Reader, out io.Writer, log *slog.Logger) mcp.Transport {
	f := &stdioFilter{log: log, out: out, pending: map[jsonrpc.ID]*batch{}}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(f.run(in, pw)) }()
	return &mcp.IOTransport{Reader: pr, Writer: f}
}

// stdioFilter reads the client's lines and writes every line to the
// client: the SDK's messages (it is the SDK's writer) and its own
// answers, serialized so each reaches stdout whole. Watching the SDK's
// messages is how it learns the negotiated protocol revision, which
// decides whether a batch is a message or an error, and how it collects
// the answers to a batch's requests.
type stdioFilter struct {
	log *slog.Logger

	mu      sync.Mutex
	out     io.Writer
	version string                // negotiated in the SDK's initialize result; "" before
	pending map[jsonrpc.ID]*batch // batch requests not answered yet, by id
}

// batch is one inbound batch whose answers are being gathered: JSON-RPC
// sends them as one array once all are in.
type batch struct {
	answers []json.RawMessage
	left    int
}

// Write takes one message from the SDK (it writes one message, newline
// included, per call).
func (f *stdioFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.version == "" {
		f.version = initializedVersion(p)
	}
	if len(f.pending) > 0 {
		if m, err := jsonrpc.DecodeMessage(p); err == nil {
			if r, ok := m.(*jsonrpc.Response); ok {
				if b := f.pending[r.ID]; b != nil {
					delete(f.pending, r.ID)
					return len(p), f.answer(b, r.ID, bytes.TrimSpace(p))
				}
			}
		}
	}
	return f.out.Write(p)
}

func (f *stdioFilter) Close() error { return nil }

// answer files msg as b's answer to id and writes the array when it was
// the last one missing. f.mu is held.
func (f *stdioFilter) answer(b *batch, id jsonrpc.ID, msg []byte) error {
	for i, a := range b.answers {
		if a == nil {
			continue
		}
		if m, err := jsonrpc.DecodeMessage(a); err == nil {
			if req, ok := m.(*jsonrpc.Request); ok && req.ID == id {
				b.answers[i] = bytes.Clone(msg)
				b.left--
				break
			}
		}
	}
	if b.left > 0 {
		return nil
	}
	return f.writeArray(b.answers)
}

// writeArray writes answers as one JSON-RPC batch answer. f.mu is held.
func (f *stdioFilter) writeArray(answers []json.RawMessage) error {
	var out bytes.Buffer
	out.WriteByte('[')
	for i, a := range answers {
		if i > 0 {
			out.WriteByte(',')
		}
		out.Write(a)
	}
	out.WriteString("]\n")
	_, err := f.out.Write(out.Bytes())
	return err
}

// initializedVersion returns the protocol version of an initialize
// result, "" for any other message. Only that result carries
// result.protocolVersion at its top level (a tool result's text cannot),
// and the substring test keeps other messages from being decoded.
func initializedVersion(msg []byte) string {
	if !bytes.Contains(msg, []byte(`"protocolVersion"`)) {
		return ""
	}
	var m struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return ""
	}
	return m.Result.ProtocolVersion
}

// rpcError is a JSON-RPC error answer with id null: the id of a line that
// is not a message cannot be known.
func rpcError(code int, msg string) json.RawMessage {
	data, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
	})
	if err != nil { // a map of strings and ints always encodes
		return json.RawMessage(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}`)
	}
	return data
}

func (f *stdioFilter) reply(msg json.RawMessage) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.out.Write(append(msg, '\n'))
	return err
}

// run passes the messages the SDK can take from in to pass, one a line,
// and answers everything else. It returns at the end of in (nil) or when
// either side fails.
func (f *stdioFilter) run(in io.Reader, pass io.Writer) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(br, mcpMaxLine)
		// Trimmed: the SDK refuses (and ends the session on) anything but
		// a newline after a message, a trailing space included.
		line = bytes.TrimSpace(line)
		if len(line) > 0 || tooLong {
			if ferr := f.take(line, tooLong, pass); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read MCP input: %w", err)
		}
	}
}

// take handles one trimmed, non-blank line.
func (f *stdioFilter) take(line []byte, tooLong bool, pass io.Writer) error {
	forward := func(msg []byte) error {
		if _, err := pass.Write(append(msg, '\n')); err != nil {
			return fmt.Errorf("pass a message on: %w", err)
		}
		return nil
	}
	refuse := func(code int, msg string) error {
		f.log.Warn("mcp: input line answered with an error", "code", code, "error", msg)
		if err := f.reply(rpcError(code, msg)); err != nil {
			return fmt.Errorf("answer a malformed line: %w", err)
		}
		return nil
	}
	switch {
	case tooLong:
		return refuse(jsonrpc.CodeParseError, fmt.Sprintf("Parse error: line longer than %d bytes", mcpMaxLine))
	case !json.Valid(line):
		var v any
		err := json.Unmarshal(line, &v)
		if err == nil {
			err = errors.New("more than one JSON value on the line")
		}
		return refuse(jsonrpc.CodeParseError, "Parse error: "+err.Error())
	case line[0] != '[':
		m, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return refuse(jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error())
		}
		if req, ok := m.(*jsonrpc.Request); ok && f.isPending(req.ID) {
			// Its answer would be taken for the batch request's.
			return refuse(jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: request id %v is already in use", req.ID.Raw()))
		}
		return forward(line)
	}
	// A batch. A fresh slice: decoding into one that aliases the line
	// would overwrite the line with the batch's first member.
	var members []json.RawMessage
	if err := json.Unmarshal(line, &members); err != nil {
		return refuse(jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error())
	}
	if len(members) == 0 {
		return refuse(jsonrpc.CodeInvalidRequest, "Invalid Request: an empty batch")
	}
	if v := f.negotiated(); v != batchVersion {
		if v == "" {
			v = "none yet (no initialize)"
		}
		return refuse(jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: JSON-RPC batches are part of MCP %s only (removed in 2025-06-18); this session's protocol version is %s: send one message per line", batchVersion, v))
	}
	if len(members) > mcpMaxBatch {
		return refuse(jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: a batch of %d messages; at most %d", len(members), mcpMaxBatch))
	}
	return f.takeBatch(members, forward)
}

func (f *stdioFilter) isPending(id jsonrpc.ID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return id.IsValid() && f.pending[id] != nil
}

func (f *stdioFilter) negotiated() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version
}

// takeBatch passes a batch's members on one by one, as JSON-RPC 2.0 and
// MCP 2025-03-26 say: each request is answered in one array sent when the
// last answer is in; a member that is not a message is answered in that
// array by an error; notifications and responses get no answer, and a
// batch of only those gets none at all.
func (f *stdioFilter) takeBatch(members []json.RawMessage, forward func([]byte) error) error {
	b := &batch{answers: make([]json.RawMessage, len(members))}
	var pass [][]byte
	f.mu.Lock()
	for i, raw := range members {
		m, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			b.answers[i] = rpcError(jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error())
			continue
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
			if f.pending[req.ID] != nil {
				// MCP forbids reusing an id in a session; two pending
				// requests with one id could not be told apart.
				b.answers[i] = rpcError(jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: request id %v is already in use", req.ID.Raw()))
				continue
			}
			// The request itself holds the slot until its answer
			// replaces it (answer finds it by id).
			b.answers[i] = raw
			f.pending[req.ID] = b
			b.left++
		}
		pass = append(pass, raw)
	}
	// Slots of notifications and responses get no answer.
	b.answers = slices.DeleteFunc(b.answers, func(a json.RawMessage) bool { return a == nil })
	var err error
	if b.left == 0 && len(b.answers) > 0 {
		err = f.writeArray(b.answers) // only errors: nothing will be answered later
	}
	f.mu.Unlock()
	if err != nil {
		return fmt.Errorf("answer a batch: %w", err)
	}
	for _, m := range pass {
		if err := forward(bytes.TrimSpace(m)); err != nil {
			return err
		}
	}
	return nil
}

// readLine reads one line without its newline. A line longer than max is
// consumed to its end and reported as tooLong, with no content: it is
// never held whole in memory.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		return line, tooLong, err
	}
}
