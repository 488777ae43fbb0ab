package claudecode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// writeBigTranscript writes a transcript of about size bytes of the usual
// mix (prompts, replies with edits and commands, large tool results) to
// path; the first prompt is first and "the last reply" last.
func writeBigTranscript(t testing.TB, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	head := `{"type":"user","uuid":"u0","sessionId":"big","cwd":"/w/app","message":{"role":"user","content":"the first prompt: fix the importer"}}` + "\n"
	w.WriteString(head)
	result := strings.Repeat("output line of a tool result ", 140)
	var n int64 = int64(len(head))
	for i := 1; n < size; i++ {
		lines := []string{
			fmt.Sprintf(`{"type":"user","uuid":"p%d","sessionId":"big","cwd":"/w/app","message":{"role":"user","content":"prompt %d: look at the importer again"}}`, i, i),
			fmt.Sprintf(`{"type":"assistant","uuid":"a%d","sessionId":"big","cwd":"/w/app","message":{"role":"assistant","content":[{"type":"text","text":"Reply %d: I changed the parser."},{"type":"tool_use","name":"Edit","input":{"file_path":"/w/app/f%d.go","old_string":"a","new_string":"b"}},{"type":"tool_use","name":"Bash","input":{"command":"go test ./..."}}]}}`, i, i, i%50),
			fmt.Sprintf(`{"type":"user","uuid":"r%d","sessionId":"big","cwd":"/w/app","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"%s"}]}}`, i, i, result),
		}
		for _, l := range lines {
			w.WriteString(l + "\n")
			n += int64(len(l) + 1)
		}
	}
	w.WriteString(`{"type":"assistant","uuid":"last","sessionId":"big","message":{"role":"assistant","content":"the last reply"}}` + "\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// A transcript of several GB (a real one could be that big with huge tool
// results; a hostile one is any size) is read within MaxTranscriptBytes:
// its start and its end, so the first prompt and the last reply are both
// there, and nothing like the whole file is read.
func TestReadTranscriptBoundsBytes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.jsonl")
	writeBigTranscript(t, p, 24<<20)
	// Make it 4 GiB without writing it: a sparse middle of NUL bytes,
	// then the real end again.
	end, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	const big = 4 << 30
	if err := os.Truncate(p, big); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	tailOf := end[len(end)-(20<<20):]
	if _, err := f.WriteAt(append([]byte("\n"), tailOf...), big); err != nil {
		t.Fatal(err)
	}
	f.Close()

	start, readBefore := time.Now(), bytesRead(t)
	s, err := ReadTranscript(context.Background(), p)
	took, read := time.Since(start), bytesRead(t)-readBefore
	if err != nil {
		t.Fatal(err)
	}
	if s.FirstPrompt != "the first prompt: fix the importer" || s.LastOutcome != "the last reply" {
		t.Errorf("first prompt %q, last outcome %q", s.FirstPrompt, s.LastOutcome)
	}
	if s.OmittedBytes < big-MaxTranscriptBytes {
		t.Errorf("omitted %d bytes of a %d-byte transcript", s.OmittedBytes, big+len(tailOf)+1)
	}
	// Bytes read, not wall time (which a loaded machine or the race
	// detector stretches past any bound): the process read the file's
	// start and end, not its 4 GiB. Other tests of the package running
	// meanwhile read far less than the 1 GiB of slack.
	if readBefore >= 0 && read > 1<<30 {
		t.Errorf("reading a 4 GiB transcript read %d bytes", read)
	}
	t.Logf("4 GiB transcript: %v, %d bytes read, %d lines, %d skipped, %d bytes left out", took, read, s.Lines, s.Skipped, s.OmittedBytes)
}

// bytesRead is what this process has read through read calls so far
// (Linux's /proc/self/io rchar), or -1 where that is not known.
func bytesRead(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatalf("/proc/self/io: %v", err)
			}
			return n
		}
	}
	return -1
}

// One line longer than the whole bound (a multi-GB line, as a sparse
// file) costs the capture that line only.
func TestReadTranscriptOneHugeLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "line.jsonl")
	first := `{"type":"user","sessionId":"s","message":{"role":"user","content":"before the huge line"}}` + "\n" + `{"type":"user","message":{"content":"`
	last := `"}}` + "\n" + `{"type":"assistant","message":{"content":"after the huge line"}}` + "\n"
	if err := os.WriteFile(p, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	const big = 3 << 30
	if err := os.Truncate(p, big); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(p, os.O_WRONLY, 0)
	f.WriteAt([]byte(last), big)
	f.Close()
	s, err := ReadTranscript(context.Background(), p)
	if err != nil || s.FirstPrompt != "before the huge line" || s.LastOutcome != "after the huge line" {
		t.Fatalf("%+v %v", s, err)
	}
}

// A read whose context ends stops between lines and says so, returning
// what it read.
func TestReadTranscriptStopsWhenCancelled(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.jsonl")
	writeBigTranscript(t, p, 20<<20)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	s, err := ReadTranscript(ctx, p)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the deadline", err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("stopped %v after the start, for a 20 ms deadline", took)
	}
	if s.FirstPrompt == "" {
		t.Errorf("what was read before the deadline is returned: %+v", s)
	}
}

// A FIFO (or any file that is not a regular one) would block the open or
// the read for as long as nothing writes to it.
func TestReadTranscriptRefusesAFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := mkfifo(p); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadTranscript(context.Background(), p); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a FIFO was read as a transcript")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO blocked")
	}
}

func BenchmarkReadTranscript(b *testing.B) {
	p := filepath.Join(b.TempDir(), "t.jsonl")
	writeBigTranscript(b, p, MaxTranscriptBytes)
	fi, _ := os.Stat(p)
	b.SetBytes(fi.Size())
	for b.Loop() {
		if _, err := ReadTranscript(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}
