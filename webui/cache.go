package webui

import (
	"context"
	"sync"
	"time"

	"github.com/anamnesis-memory/anamnesis"
)

// slowCache holds what takes too long to compute for a page: doctor's
// findings (its integrity check and postings comparison take 0.3 s at
// 10,000 notes) and the tailnet's peers (each probed with a timeout).
// The fleet page shows the last answer with its time and starts a new
// check in the background when it is older than slowMaxAge.
type slowCache struct {
	mu   sync.Mutex
	last slowSnapshot // At zero: never checked
}

const slowMaxAge = 2 * time.Minute

// slowSnapshot is the last check, as the fleet page shows it.
type slowSnapshot struct {
	Running  bool
	At       time.Time // when the last check finished
	Checks   []anamnesis.Check
	Tailnet  *Tailnet
	TailErr  string
	Duration time.Duration
}

func (c *slowCache) snapshot() slowSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// refreshSlow starts a check unless one runs; wait makes the caller wait
// for it (the benchmark and tests).
func (s *Server) refreshSlow(wait bool) {
	c := &s.slow
	c.mu.Lock()
	if c.last.Running {
		c.mu.Unlock()
		return
	}
	c.last.Running = true
	c.mu.Unlock()
	run := func() {
		start := time.Now()
		ctx, cancel := context.WithTimeout(s.baseCtx, time.Minute)
		defer cancel()
		checks := s.st.Doctor(ctx, s.opts.Install)
		var tn *Tailnet
		var tailErr string
		if s.opts.Tailnet != nil {
			t, err := s.opts.Tailnet(ctx)
			if err != nil {
				tailErr = err.Error()
			} else {
				tn = &t
			}
		}
		c.mu.Lock()
		c.last = slowSnapshot{At: s.opts.Now(), Checks: checks, Tailnet: tn, TailErr: tailErr, Duration: time.Since(start)}
		c.mu.Unlock()
	}
	if wait {
		run()
		return
	}
	go run()
}

// derivedCache keeps what is derived from memory/'s history, keyed by
// the commit main pointed at: a new commit (a write, a sync by another
// process) changes the key, so nothing stale is shown, and reading the
// key costs one small file.
type derivedCache struct {
	mu      sync.Mutex
	head    string
	fleet   *fleetData
	history map[string]anamnesis.History // by note id
}

type fleetData struct {
	Machines []anamnesis.MachineActivity
	Complete bool
}

// maxHistories bounds the notes whose history is kept per head.
const maxHistories = 256

func (c *derivedCache) at(head string) {
	if c.head != head {
		c.head, c.fleet, c.history = head, nil, map[string]anamnesis.History{}
	}
}

func (s *Server) fleetOf(ctx context.Context) (*fleetData, error) {
	head, err := s.st.Head(ctx)
	if err != nil {
		return nil, err
	}
	c := &s.cache
	c.mu.Lock()
	c.at(head)
	f := c.fleet
	c.mu.Unlock()
	if f != nil {
		return f, nil
	}
	ms, complete, err := s.st.Fleet(ctx, 0)
	if err != nil {
		return nil, err
	}
	f = &fleetData{Machines: ms, Complete: complete}
	c.mu.Lock()
	if c.head == head {
		c.fleet = f
	}
	c.mu.Unlock()
	return f, nil
}

func (s *Server) historyOf(ctx context.Context, id string) (anamnesis.History, error) {
	head, err := s.st.Head(ctx)
	if err != nil {
		return anamnesis.History{}, err
	}
	c := &s.cache
	c.mu.Lock()
	c.at(head)
	h, ok := c.history[id]
	c.mu.Unlock()
	if ok {
		return h, nil
	}
	h, err = s.st.History(ctx, id, 0)
	if err != nil {
		return h, err
	}
	c.mu.Lock()
	if c.head == head && head != "" {
		if len(c.history) >= maxHistories {
			clear(c.history)
		}
		c.history[id] = h
	}
	c.mu.Unlock()
	return h, nil
}

// facetsMaxAge is how long the filters' counts are reused. They change
// with the index, which other processes (syncs, hooks) change without a
// sign this server can read cheaply; counts in a drop-down a few seconds
// old are harmless, and this server's own writes clear them at once.
const facetsMaxAge = 10 * time.Second

type facetsCache struct {
	mu sync.Mutex
	at time.Time
	f  anamnesis.Facets
}

func (s *Server) facets(ctx context.Context) (anamnesis.Facets, error) {
	c := &s.facetsC
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && s.opts.Now().Sub(c.at) < facetsMaxAge {
		return c.f, nil
	}
	f, err := s.st.Facets(ctx)
	if err != nil {
		return f, err
	}
	c.f, c.at = f, s.opts.Now()
	return f, nil
}

func (s *Server) forgetFacets() {
	s.facetsC.mu.Lock()
	s.facetsC.at = time.Time{}
	s.facetsC.mu.Unlock()
}
