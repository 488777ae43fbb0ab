package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/claudecode"
)

// writeWorkTranscript writes a transcript of about size bytes of real
// work (prompts, edits, commands, large tool results) for session id.
func writeWorkTranscript(t *testing.T, path, id string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	result := strings.Repeat("output of the tool ", 200)
	var n int64
	for i := 0; n < size; i++ {
		for _, l := range []string{
			fmt.Sprintf(`{"type":"user","uuid":"p%d","sessionId":%q,"cwd":"/tmp/app","message":{"role":"user","content":"step %d: fix the importer"}}`, i, id, i),
			fmt.Sprintf(`{"type":"assistant","uuid":"a%d","sessionId":%q,"message":{"role":"assistant","content":[{"type":"text","text":"Changed the importer, step %d."},{"type":"tool_use","name":"Edit","input":{"file_path":"/tmp/app/f%d.go"}}]}}`, i, id, i, i%20),
			fmt.Sprintf(`{"type":"user","uuid":"r%d","sessionId":%q,"message":{"role":"user","content":[{"type":"tool_result","content":%q}]}}`, i, id, result),
		} {
			w.WriteString(l + "\n")
			n += int64(len(l) + 1)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func hookInput(session, transcript string) string {
	in, _ := json.Marshal(map[string]string{"session_id": session, "transcript_path": transcript, "cwd": "/tmp/app", "hook_event_name": "SessionEnd"})
	return string(in)
}

// A transcript of 4 GiB (sparse: its middle is a hole of NUL bytes, one
// "line" of gigabytes) is captured within the hook's budget: the hook
// reads its first and last bytes only (claudecode.MaxTranscriptBytes),
// and the note says that part was left out.
func TestHookSessionEndBoundsAHugeTranscript(t *testing.T) {
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "seed", "--body", "x"))
	tr := filepath.Join(t.TempDir(), "huge.jsonl")
	head := `{"type":"user","uuid":"u1","sessionId":"huge","cwd":"/tmp/app","message":{"role":"user","content":"Make the importer skip empty rows"}}` + "\n"
	tail := "\n" + `{"type":"assistant","uuid":"a1","sessionId":"huge","message":{"role":"assistant","content":[{"type":"text","text":"The importer now skips empty rows."},{"type":"tool_use","name":"Edit","input":{"file_path":"/tmp/app/importer.go"}}]}}` + "\n"
	if err := os.WriteFile(tr, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	const size = 4 << 30
	if err := os.Truncate(tr, size); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(tr, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte(tail), size)
	f.Close()

	start := time.Now()
	r := anm(t, home, hookInput("huge", tr), "hook", "session-end")
	took := time.Since(start)
	if r.code != 0 || !strings.Contains(r.stderr, "wrote session note") {
		t.Fatalf("session-end on a 4 GiB transcript: exit %d stderr %q", r.code, r.stderr)
	}
	if took > claudecode.CaptureBudget {
		t.Errorf("session-end on a 4 GiB transcript took %v; the budget is %v", took, claudecode.CaptureBudget)
	}
	notes, _ := filepath.Glob(filepath.Join(home, "memory", "episodic", "*.md"))
	if len(notes) != 1 {
		t.Fatalf("episodic notes: %v", notes)
	}
	body, _ := os.ReadFile(notes[0])
	for _, want := range []string{"skip empty rows", "importer.go", "Made from part of the session's transcript"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the note lacks %q:\n%s", want, body)
		}
	}
	t.Logf("4 GiB transcript captured in %v", took)
}

// A SIGTERM while session-end reads its transcript (Claude Code stopping
// a hook past its timeout) ends the hook within a second: it stops
// reading, writes nothing, holds no lock, and the store is whole. The
// signal is sent once /proc shows the hook has the transcript open.
func TestHookSessionEndStopsOnSIGTERM(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "seed", "--body", "x"))
	tr := filepath.Join(t.TempDir(), "work.jsonl")
	// The whole of what a capture reads, so the read takes a while
	// (about 0.2 s here, longer under load).
	writeWorkTranscript(t, tr, "term", claudecode.MaxTranscriptBytes)

	for _, event := range []string{"session-end", "pre-compact"} {
		cmd := exec.Command(binary, "hook", event)
		cmd.Env = append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=clitest")
		cmd.Stdin = strings.NewReader(hookInput("term", tr))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if !awaitOpen(cmd.Process.Pid, tr, 10*time.Second) {
			cmd.Process.Kill()
			<-done
			t.Fatalf("%s never opened the transcript (stderr: %s)", event, stderr.String())
		}
		cmd.Process.Signal(syscall.SIGTERM)
		sent := time.Now()
		select {
		case err := <-done:
			if took := time.Since(sent); took > time.Second {
				t.Errorf("%s exited %v after SIGTERM", event, took)
			}
			if err != nil {
				t.Errorf("%s after SIGTERM: %v (a hook exits 0, its problem on stderr)", event, err)
			}
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("%s still ran 5 s after SIGTERM", event)
		}
		if !strings.Contains(stderr.String(), "capture stopped, nothing written") {
			t.Errorf("%s after SIGTERM mid-read: stderr %q", event, stderr.String())
		}
	}
	if notes, _ := filepath.Glob(filepath.Join(home, "memory", "episodic", "*")); len(notes) != 0 {
		t.Errorf("a stopped capture left files: %v", notes)
	}
	// No lock held and the store whole: a capture left alone now
	// writes its note, and the tree and the index agree.
	start := time.Now()
	r := mustOK(t, anm(t, home, hookInput("term", tr), "hook", "session-end"))
	if !strings.Contains(r.stderr, "wrote session note") {
		t.Errorf("capture after the stopped ones: %q", r.stderr)
	}
	if took := time.Since(start); took > claudecode.CaptureBudget {
		t.Errorf("capture after the stopped ones took %v", took)
	}
	rep := mustOK(t, anm(t, home, "", "reindex", "--json"))
	if strings.Contains(rep.stdout, `"skipped": [
    {`) || !strings.Contains(rep.stdout, `"added": 0`) {
		t.Errorf("index and tree disagree after stopped captures: %s", rep.stdout)
	}
	if left, _ := filepath.Glob(filepath.Join(home, "memory", "*", ".tmp-anamnesis-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// awaitOpen waits until process pid has path open, by its /proc fds.
func awaitOpen(pid int, path string, timeout time.Duration) bool {
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); {
		entries, _ := os.ReadDir(fds)
		for _, e := range entries {
			if target, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && target == path {
				return true
			}
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// A caller that never closes the hook's stdin cannot hold it past
// SIGTERM: the hook gives up reading its input and exits.
func TestHookWithOpenStdinStopsOnSIGTERM(t *testing.T) {
	home := t.TempDir()
	cmd := exec.Command(binary, "hook", "session-end")
	cmd.Env = append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=clitest")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stdin.Write([]byte(`{"session_id":"open",`)) // and never the rest, nor EOF
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	sent := time.Now()
	select {
	case err := <-done:
		if took := time.Since(sent); took > time.Second {
			t.Errorf("exited %v after SIGTERM", took)
		}
		if err != nil || !strings.Contains(stderr.String(), "read hook input") {
			t.Errorf("exit %v, stderr %q", err, stderr.String())
		}
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("the hook still ran 5 s after SIGTERM, waiting for its input")
	}
}
