package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// progressLine shows the store's progress reports as one line on stderr,
// rewritten in place, and only when stderr is a terminal: in a pipe, a log
// or a Claude Code hook they would be noise.
type progressLine struct {
	mu        sync.Mutex
	w         io.Writer
	tty       bool
	shown     bool
	lastStage string
	last      time.Time
}

func newProgressLine(w io.Writer) *progressLine {
	// The line is drawn with a terminal escape, which the escaping writer
	// run() puts around stderr would show as text; its text is the
	// store's own stage names, never note text, so it goes to the
	// terminal directly.
	if v, ok := w.(*visibleWriter); ok {
		w = v.w
	}
	f, ok := w.(*os.File)
	return &progressLine{w: w, tty: ok && term.IsTerminal(int(f.Fd()))}
}

// update is an anamnesis.Options.Progress.
func (p *progressLine) update(stage string, done, total int) {
	if !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if stage == "" || (total > 0 && done >= total) {
		p.clearLocked()
		return
	}
	now := time.Now()
	if stage == p.lastStage && now.Sub(p.last) < 100*time.Millisecond {
		return // a few redraws a second are enough
	}
	line := "anamnesis: " + stage
	if total > 0 {
		line += fmt.Sprintf(": %d/%d", done, total)
	} else {
		line += "..."
	}
	fmt.Fprint(p.w, "\r\x1b[K"+line)
	p.shown, p.lastStage, p.last = true, stage, now
}

// clear removes the line, so what is printed next starts on a clean one.
func (p *progressLine) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
}

func (p *progressLine) clearLocked() {
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown, p.lastStage = false, ""
	}
}
