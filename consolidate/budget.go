package consolidate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

// Limits bound what consolidation may spend. Zero in a daily limit means
// no limit of that kind; RunCalls 0 means no call at all.
type Limits struct {
	RunCalls   int     // calls in one run (--max-calls)
	DayCalls   int     // calls per UTC day, all runs on this machine
	DayChars   int     // input characters per UTC day
	DayUSD     float64 // dollars per UTC day, where the backend reports cost
	CallBudget float64 // dollars one call may spend (the claude CLI's --max-budget-usd)
}

// DefaultLimits keep a run that nobody watches cheap: 10 calls a run, 50
// calls, 2 million input characters and 2 dollars a day.
func DefaultLimits() Limits {
	return Limits{RunCalls: 10, DayCalls: 50, DayChars: 2_000_000, DayUSD: 2, CallBudget: 0.5}
}

// Spent is a day's use, kept in the state file.
type Spent struct {
	Day   string  `json:"day"` // UTC, YYYY-MM-DD
	Calls int     `json:"calls"`
	Chars int     `json:"input_chars"`
	USD   float64 `json:"usd"`
}

// ErrBudget is a call refused before it was made because a limit would be
// passed.
var ErrBudget = errors.New("consolidation budget reached")

// Budget enforces Limits before each call and records each call's use in
// a state file, so separate runs on one day add up.
type Budget struct {
	Limits Limits
	Path   string // the state file (<home>/state/consolidate-budget.json)
	// Root is the store's home: the file is never written through a link
	// below it, as no store file is ("": Path is written as it is).
	Root  string
	Now   func() time.Time
	calls int // this run's
}

func (b *Budget) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Today is the day's use so far (zero on a new day or without a file).
func (b *Budget) Today() (Spent, error) {
	day := b.now().UTC().Format("2006-01-02")
	data, err := os.ReadFile(b.Path)
	if errors.Is(err, os.ErrNotExist) {
		return Spent{Day: day}, nil
	}
	if err != nil {
		return Spent{}, fmt.Errorf("read consolidation budget %s: %w", b.Path, err)
	}
	var s Spent
	if err := json.Unmarshal(data, &s); err != nil || s.Day != day {
		return Spent{Day: day}, nil // an unreadable or old record counts as a fresh day
	}
	return s, nil
}

// Allow says whether a call with chars characters of input may be made.
func (b *Budget) Allow(chars int) error {
	if b.calls >= b.Limits.RunCalls {
		return fmt.Errorf("%w: %d call(s) this run (--max-calls %d)", ErrBudget, b.calls, b.Limits.RunCalls)
	}
	s, err := b.Today()
	if err != nil {
		return err
	}
	l := b.Limits
	switch {
	case l.DayCalls > 0 && s.Calls+1 > l.DayCalls:
		return fmt.Errorf("%w: %d of %d call(s) today", ErrBudget, s.Calls, l.DayCalls)
	case l.DayChars > 0 && s.Chars+chars > l.DayChars:
		return fmt.Errorf("%w: %d + %d input characters would pass today's %d", ErrBudget, s.Chars, chars, l.DayChars)
	case l.DayUSD > 0 && s.USD >= l.DayUSD:
		return fmt.Errorf("%w: $%.2f of $%.2f today", ErrBudget, s.USD, l.DayUSD)
	}
	return nil
}

// Record adds one call's use. A call that failed still counts: it was
// made, and a backend that fails after spending has spent.
func (b *Budget) Record(chars int, usd float64) error {
	b.calls++
	s, err := b.Today()
	if err != nil {
		return err
	}
	s.Calls++
	s.Chars += chars
	s.USD += usd
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(b.Path), 0o700); err != nil {
		return fmt.Errorf("record consolidation budget: %w", err)
	}
	write := note.WritePrivateFileAtomic
	if b.Root != "" {
		write = func(p string, data []byte) error { return note.WritePrivateFileAtomicIn(b.Root, p, data) }
	}
	if err := write(b.Path, data); err != nil {
		return fmt.Errorf("record consolidation budget %s: %w", b.Path, err)
	}
	return nil
}
