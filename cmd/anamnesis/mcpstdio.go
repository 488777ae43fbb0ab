package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpMaxLine bounds one inbound JSON-RPC line, as the SDK's own default.
const mcpMaxLine = mcp.DefaultMaxLineLength

// tolerantStdio is the MCP stdio transport with a filter in front of the
// SDK: its reader stops the whole session at the first line that is not
// JSON (or not a JSON-RPC message), so one stray line from a client or a
// wrapper script would end the server. The filter answers such a line
// itself, as JSON-RPC says (-32700 parse error, -32600 invalid request,
// id null), and passes only well-formed messages on.
func tolerantStdio(in io.Reader, out io.Writer, log *slog.Logger) mcp.Transport {
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(filterJSONRPC(in, pw, w, log)) }()
	return &mcp.IOTransport{Reader: pr, Writer: w}
}

// lockedWriter serializes the SDK's messages and the filter's error
// replies, so each reaches stdout as a whole line. The SDK writes one
// message (with its newline) per Write call.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// filterJSONRPC copies well-formed JSON-RPC lines from in to pass and
// answers every other non-blank line on reply. It returns at the end of
// in (nil) or when either side fails.
func filterJSONRPC(in io.Reader, pass io.Writer, reply io.Writer, log *slog.Logger) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(br, mcpMaxLine)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			code, msg := checkJSONRPC(line, tooLong)
			if code == 0 {
				if _, werr := pass.Write(append(line, '\n')); werr != nil {
					return werr
				}
			} else {
				log.Warn("mcp: malformed input line answered with an error", "code", code, "error", msg)
				if werr := writeRPCError(reply, code, msg); werr != nil {
					return werr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readLine reads one line without its newline. A line longer than max is
// consumed to its end and reported as tooLong, with no content.
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

// checkJSONRPC returns 0 for a line the SDK can take (one JSON-RPC
// message, or a non-empty batch of them), else the JSON-RPC error code and
// message to answer with.
func checkJSONRPC(line []byte, tooLong bool) (int, string) {
	if tooLong {
		return jsonrpc.CodeParseError, fmt.Sprintf("Parse error: line longer than %d bytes", mcpMaxLine)
	}
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v)
		if err == nil {
			err = errors.New("more than one JSON value on the line")
		}
		return jsonrpc.CodeParseError, "Parse error: " + err.Error()
	}
	msgs := []json.RawMessage{line}
	if t := bytes.TrimSpace(line); t[0] == '[' {
		if err := json.Unmarshal(t, &msgs); err != nil || len(msgs) == 0 {
			return jsonrpc.CodeInvalidRequest, "Invalid Request: an empty batch"
		}
	}
	for _, m := range msgs {
		if _, err := jsonrpc.DecodeMessage(m); err != nil {
			return jsonrpc.CodeInvalidRequest, "Invalid Request: " + err.Error()
		}
	}
	return 0, ""
}

func writeRPCError(w io.Writer, code int, msg string) error {
	data, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
	})
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
