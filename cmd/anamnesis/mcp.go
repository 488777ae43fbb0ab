package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"
)

// Output bounds for tool results. Claude Code caps MCP output (about 25k
// tokens by default); staying well under keeps every result whole.
const (
	mcpBodyCap  = 4000  // characters of one note body in search/get results
	mcpTotalCap = 40000 // characters of all bodies in one result
)

const mcpInstructions = `anamnesis is this user's long-term memory for coding work, shared across their machines.
It holds markdown notes of three types: procedural (how-tos, fixes, decisions), semantic (facts,
preferences, conventions) and episodic (what happened in earlier sessions, written automatically
when a session ends). Notes have a project (a repository key such as github.com/owner/repo, or
"global" for notes about the user in general).

Searching helps when the user refers to earlier work, a decision, a convention, a recurring error
or "last time"; when starting on an unfamiliar part of a project; and before writing a note, to
find one to update instead. memory_search ranks by keyword relevance (any word may match), so
specific terms work best. Notes the user's session started with are already in context.

memory_write stores a new durable note; it is committed at once and, when a remote is set, synced
to the other machines within seconds. Its answer lists "similar": the project's live notes with
close titles. If one states an older version of the fact just written, write the note once more
with supersedes naming that old id and the id just returned, so only the current one is shown.
Two notes marked "looks like another version of the same fact" are such a pair left unsettled.

A note marked CONFLICT COPY is another machine's version of the note shown just before it (a sync
met overlapping edits); neither is settled until memory_resolve keeps one or the merged text. A note that replaces older ones names them in supersedes, which hides them from
search.`

func mcpCommand() *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve memory to Claude Code over MCP (stdio)",
		Description: "Tools: memory_search, memory_list, memory_get, memory_status (read-only),\n" +
			"memory_write, memory_sync. Logs go to stderr; the server exits when stdin closes.\n" +
			"`anamnesis init` registers it with Claude Code.",
		Action: func(c *cli.Context) error {
			s, err := openStore(c, forServer)
			if err != nil {
				return err
			}
			defer s.Close()
			log := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))
			var written func()
			if s.Remote() != "" {
				// A note written through MCP reaches the other machines
				// within seconds, not at the end of the session: a sync is
				// started in the background once writes pause.
				soon := newDebouncer(mcpSyncDelay, func() {
					if err := spawnSelf(envOf(c), s.Home(), "sync"); err != nil {
						log.Warn("background sync not started", "err", err)
					}
				})
				defer soon.flush() // a write just before the session ends still goes out
				written = soon.poke
			}
			// The first memory_search then finds the vectors in memory.
			go s.WarmVectors(c.Context)
			srv := newMCPServer(s, log, written)
			err = srv.Run(c.Context, tolerantStdio(c.App.Reader, c.App.Writer, log))
			if err != nil && (errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "EOF")) {
				return nil
			}
			return err
		},
	}
}

// Tool inputs. Fields without omitempty are required.
type searchIn struct {
	Query   string `json:"query" jsonschema:"words to look for; any of them may match"`
	Project string `json:"project,omitempty" jsonschema:"only notes of this project key"`
	Type    string `json:"type,omitempty" jsonschema:"procedural, semantic or episodic"`
	Scope   string `json:"scope,omitempty" jsonschema:"portable (synced) or machine-local"`
	K       int    `json:"k,omitempty" jsonschema:"how many notes, default 8"`
}

type listIn struct {
	Project string `json:"project,omitempty" jsonschema:"only notes of this project key"`
	Type    string `json:"type,omitempty" jsonschema:"procedural, semantic or episodic"`
	Scope   string `json:"scope,omitempty" jsonschema:"portable or machine-local"`
	Limit   int    `json:"limit,omitempty" jsonschema:"at most this many notes, default 50"`
}

type getIn struct {
	ID string `json:"id" jsonschema:"the note id"`
}

type writeIn struct {
	Type       string   `json:"type" jsonschema:"procedural (how-tos, fixes, decisions), semantic (facts, preferences, conventions) or episodic (what happened)"`
	Title      string   `json:"title" jsonschema:"one line"`
	Body       string   `json:"body" jsonschema:"the note, markdown"`
	Project    string   `json:"project,omitempty" jsonschema:"project key; default global"`
	Tags       []string `json:"tags,omitempty"`
	Scope      string   `json:"scope,omitempty" jsonschema:"portable (default, synced to the user's other machines) or machine-local"`
	Supersedes []string `json:"supersedes,omitempty" jsonschema:"ids of notes this one replaces"`
}

type resolveIn struct {
	ID   string `json:"id" jsonschema:"a note with conflict copies, one of its copies, or a note two machines both superseded"`
	Keep string `json:"keep,omitempty" jsonschema:"id of the version to keep"`
	Body string `json:"body,omitempty" jsonschema:"the merged text, instead of (or on top of) keeping one version"`
}

type emptyIn struct{}

type reviewIn struct {
	Action string `json:"action,omitempty" jsonschema:"list (the default), accept or discard"`
	ID     string `json:"id,omitempty" jsonschema:"the pending proposal to accept or discard"`
}

type reviewOut struct {
	Pending []anamnesis.PendingView `json:"pending,omitempty"`
	Run     string                  `json:"run,omitempty"`
	Done    string                  `json:"done,omitempty"`
}

type notesOut struct {
	Results []anamnesis.NoteJSON `json:"results"`
	Note    string               `json:"note,omitempty"`
}

type writeOut struct {
	ID   string `json:"id"`
	Path string `json:"path"`
	// Similar are live notes of the same project whose titles are close
	// to the new one's: the model may have meant to replace one
	// (supersedes) and can do so in the same turn.
	Similar []anamnesis.SimilarNote `json:"similar"`
}

// similarShown is how many similar notes a write returns.
const similarShown = 3

// toMCP is h as a result note: without its body (a listing) when budget
// is nil, else with its body cut to mcpBodyCap and to what is left of
// budget, which it decreases.
func toMCP(h anamnesis.Hit, withScore bool, budget *int) anamnesis.NoteJSON {
	n := anamnesis.NoteOf(h, withScore)
	if budget == nil {
		n.Body = nil
		return n
	}
	body := h.Body
	limit := min(mcpBodyCap, max(*budget, 0))
	if utf8.RuneCountInString(body) > limit {
		r := []rune(body)
		body = string(r[:limit]) + fmt.Sprintf("\n…[truncated: %d more characters; memory_get returns the whole note]", len(r)-limit)
		n.Truncated = true
	}
	*budget -= utf8.RuneCountInString(body)
	n.Body = &body
	return n
}

// inertResult is a tool's result with every string in it, map keys
// included, passed through claudecode.Inert: titles, bodies, tags,
// projects, ids and the rest come from notes any machine wrote, and the
// model reads a result as it is (the SDK's JSON escapes '<' in the text
// content, but not in structuredContent, which clients decode). A JSON
// round trip reaches every field of every result type.
func inertResult[T any](v T) (*mcp.CallToolResult, T, error) {
	var zero T
	data, err := json.Marshal(v)
	if err != nil {
		return nil, zero, fmt.Errorf("encode result: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers come back exactly as they went
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, zero, fmt.Errorf("decode result: %w", err)
	}
	if data, err = json.Marshal(inertTree(tree)); err != nil {
		return nil, zero, fmt.Errorf("encode result: %w", err)
	}
	var out T
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, zero, fmt.Errorf("decode result: %w", err)
	}
	return nil, out, nil
}

func inertTree(v any) any {
	switch v := v.(type) {
	case string:
		return claudecode.Inert(v)
	case []any:
		for i := range v {
			v[i] = inertTree(v[i])
		}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[claudecode.Inert(k)] = inertTree(e)
		}
		return out
	}
	return v
}

func readOnly() *mcp.ToolAnnotations {
	f := false
	return &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f}
}

// newMCPServer serves s; written, if not nil, is called after each note
// written through memory_write.
func newMCPServer(s *anamnesis.Store, log *slog.Logger, written func()) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "anamnesis", Version: version},
		&mcp.ServerOptions{Instructions: mcpInstructions, Logger: log})
	t := mcpTools{s: s, log: log, written: written}
	f, yes := false, true

	mcp.AddTool(srv, &mcp.Tool{Name: "memory_search", Annotations: readOnly(),
		Description: "Search the user's memory notes by keywords, best match first (BM25 over title, body and tags; any word may match). Returns up to k notes (default 8) with their bodies, each with its rank and its relevance relative to the best match (1 = best). Notes that match only on words most notes contain, and superseded notes, are left out. Filter by project, type or scope when useful."},
		t.search)
	mcp.AddTool(srv, &mcp.Tool{Name: "memory_list", Annotations: readOnly(),
		Description: "List memory notes newest first, without bodies (use memory_get for one note). Superseded notes are included. Filter by project, type or scope; limit defaults to 50."},
		t.list)
	mcp.AddTool(srv, &mcp.Tool{Name: "memory_get", Annotations: readOnly(),
		Description: "Read one memory note in full by id."},
		t.get)
	mcp.AddTool(srv, &mcp.Tool{Name: "memory_status", Annotations: readOnly(),
		Description: "Report the memory store: note counts by type, scope and project, index state, files that could not be indexed, sync remote and head, and unresolved conflicts (conflict copies, and notes two machines both superseded)."},
		t.status)
	mcp.AddTool(srv, &mcp.Tool{Name: "memory_write", Annotations: &mcp.ToolAnnotations{DestructiveHint: &f, OpenWorldHint: &f},
		Description: "Store a new memory note for the user, committed at once and, when sync is set up, on their other machines within seconds (unless scope is machine-local). Types: procedural (verified how-tos, fixes, decisions), semantic (facts, preferences, conventions), episodic (what happened). Use supersedes to replace older notes. Returns the new id and the project's notes with similar titles (similar): if one states an older version of this fact, supersede it."},
		t.write)
	mcp.AddTool(srv, &mcp.Tool{Name: "memory_resolve", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &f},
		Description: "Settle a memory conflict, shown in results as a CONFLICT COPY next to its note (a sync met overlapping edits and kept both) or as two notes that replace the same note. Keep one version by id, or give the merged text in body. Conflict copies are deleted; of two replacing notes the kept one supersedes the other. Committed, and synced within seconds. memory_status lists the conflicts."},
		t.resolve)
	mcp.AddTool(srv, &mcp.Tool{Name: "memory_review", Annotations: &mcp.ToolAnnotations{DestructiveHint: &f, OpenWorldHint: &f},
		Description: "Review what `anamnesis consolidate --review` proposed (session notes distilled, redundant notes merged): list shows each pending proposal beside the notes it would replace; accept applies one (a commit, undone with `anamnesis consolidate --undo`); discard drops it. Pending proposals are neither shown in memory nor hide anything."},
		t.review)
	mcp.AddTool(srv, &mcp.Tool{Name: "memory_sync", Annotations: &mcp.ToolAnnotations{DestructiveHint: &f, OpenWorldHint: &yes},
		Description: "Sync memory with the user's other machines now: commit, fetch, merge (never blocks on conflicts; overlapping edits are kept as conflict copies), push, reindex. Returns what happened."},
		t.sync)
	return srv
}

// mcpTools are the MCP server's tools, one method each, over one store.
type mcpTools struct {
	s       *anamnesis.Store
	log     *slog.Logger
	written func() // called after a change worth syncing; nil: none
}

// wrote tells the server a change is worth syncing.
func (t mcpTools) wrote() {
	if t.written != nil {
		t.written()
	}
}

func (t mcpTools) search(ctx context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, notesOut, error) {
	if strings.TrimSpace(in.Query) == "" {
		return nil, notesOut{}, errors.New("query: give some words to search for")
	}
	if in.K < 0 || in.K > anamnesis.MaxK {
		return nil, notesOut{}, fmt.Errorf("k: must be between 1 and %d", anamnesis.MaxK)
	}
	mode := t.s.DefaultMode()
	hits, degraded, err := t.s.SearchMode(ctx, in.Query, anamnesis.Filter{Project: in.Project, Type: in.Type, Scope: in.Scope, Limit: in.K}, mode)
	if err != nil {
		return nil, notesOut{}, err
	}
	if degraded != nil {
		t.log.Warn("semantic search unavailable; BM25 results", "err", degraded)
		mode = anamnesis.ModeFTS
	}
	out := notesOut{Results: rankedForMCP(hits, mode)}
	if len(hits) == 0 {
		out.Note = "no matching notes"
	}
	return inertResult(out)
}

// rankedForMCP is a search's hits as memory_search returns them, each
// with its rank and relevance, within mcpTotalCap. An fts search leaves
// out the hits that matched only on common words.
func rankedForMCP(hits []anamnesis.Hit, mode string) []anamnesis.NoteJSON {
	out := []anamnesis.NoteJSON{}
	budget := mcpTotalCap
	relevant := hits
	if mode == anamnesis.ModeFTS {
		relevant = anamnesis.Relevant(hits)
	}
	for i, h := range relevant {
		// A fused score (0.0164 for rank 1 in one leg) and each
		// leg's rank say why a note ranked there; a raw bm25 score
		// (0.0000014) says nothing, so an fts result carries only
		// its rank and relevance.
		n := toMCP(h, mode == anamnesis.ModeHybrid, &budget)
		n.Rank, n.Relevance = i+1, anamnesis.Relevance(h.Score, relevant[0].Score)
		out = append(out, n)
	}
	return out
}

func (t mcpTools) list(ctx context.Context, _ *mcp.CallToolRequest, in listIn) (*mcp.CallToolResult, notesOut, error) {
	if in.Limit < 0 {
		return nil, notesOut{}, errors.New("limit: must not be negative")
	}
	limit := in.Limit
	if limit == 0 {
		limit = 50
	}
	hits, err := t.s.List(ctx, anamnesis.Filter{Project: in.Project, Type: in.Type, Scope: in.Scope, Limit: limit})
	if err != nil {
		return nil, notesOut{}, err
	}
	out := notesOut{Results: []anamnesis.NoteJSON{}}
	for _, h := range hits {
		out.Results = append(out.Results, toMCP(h, false, nil))
	}
	return inertResult(out)
}

func (t mcpTools) get(ctx context.Context, _ *mcp.CallToolRequest, in getIn) (*mcp.CallToolResult, anamnesis.NoteJSON, error) {
	n, path, err := t.s.Get(ctx, in.ID)
	if err != nil {
		return nil, anamnesis.NoteJSON{}, err
	}
	budget := mcpTotalCap
	return inertResult(toMCP(anamnesis.Hit{Note: *n, Path: path}, false, &budget))
}

func (t mcpTools) status(ctx context.Context, _ *mcp.CallToolRequest, _ emptyIn) (*mcp.CallToolResult, anamnesis.Status, error) {
	st, err := t.s.Status(ctx)
	if err != nil {
		return nil, anamnesis.Status{}, err
	}
	return inertResult(st)
}

func (t mcpTools) write(ctx context.Context, _ *mcp.CallToolRequest, in writeIn) (*mcp.CallToolResult, writeOut, error) {
	// The Store validates (anamnesis.ErrInvalid); its message, which
	// names the field, becomes the tool error.
	// prov_source stays one the Python tool's index accepts
	// (human, session-end, reflection, import, merge): a note
	// written on purpose, not made from a transcript; prov_model
	// says Claude wrote it.
	n, path, err := t.s.Write(ctx, anamnesis.WriteRequest{Type: in.Type, Title: in.Title, Body: in.Body,
		Project: in.Project, Tags: in.Tags, Scope: in.Scope, Supersedes: in.Supersedes, ProvModel: anamnesis.ProvModelMCP, Once: true})
	if err != nil {
		return nil, writeOut{}, err
	}
	if n.Scope == note.ScopePortable {
		t.wrote()
	}
	// The note is written: a failed look for similar notes costs
	// the answer only its hint.
	sim, err := t.s.Similar(ctx, n, similarShown)
	if err != nil {
		sim = []anamnesis.SimilarNote{}
	}
	return inertResult(writeOut{ID: n.ID, Path: path, Similar: sim}) // similar titles are other notes' text
}

func (t mcpTools) resolve(ctx context.Context, _ *mcp.CallToolRequest, in resolveIn) (*mcp.CallToolResult, anamnesis.ResolveReport, error) {
	r := anamnesis.Resolution{Keep: in.Keep}
	if in.Body != "" {
		r.Body = &in.Body
	}
	rep, err := t.s.Resolve(ctx, in.ID, r)
	if err != nil {
		return nil, anamnesis.ResolveReport{}, err
	}
	t.wrote()
	return inertResult(rep)
}

func (t mcpTools) review(ctx context.Context, _ *mcp.CallToolRequest, in reviewIn) (*mcp.CallToolResult, reviewOut, error) {
	switch in.Action {
	case "", "list":
		views, err := t.s.PendingViews(ctx)
		if err != nil {
			return nil, reviewOut{}, err
		}
		return inertResult(reviewOut{Pending: views})
	case "accept", "discard":
		run, err := t.s.ReviewPending(ctx, in.ID, in.Action == "accept")
		if err != nil {
			return nil, reviewOut{}, err
		}
		if run != "" {
			t.wrote()
		}
		return inertResult(reviewOut{Run: run, Done: in.Action + "ed " + in.ID})
	}
	return nil, reviewOut{}, fmt.Errorf("action %q: want list, accept or discard", in.Action)
}

func (t mcpTools) sync(ctx context.Context, _ *mcp.CallToolRequest, _ emptyIn) (*mcp.CallToolResult, anamnesis.SyncReport, error) {
	rep, err := t.s.Sync(ctx, anamnesis.SyncOptions{})
	if err != nil {
		return nil, anamnesis.SyncReport{}, err
	}
	return inertResult(rep)
}

// mcpSyncDelay is how long the MCP server waits after a write before it
// starts a background sync: a burst of writes goes out in one sync.
const mcpSyncDelay = 2 * time.Second

// debouncer runs fn once, delay after the last poke.
type debouncer struct {
	mu    sync.Mutex
	delay time.Duration
	fn    func()
	t     *time.Timer
}

func newDebouncer(delay time.Duration, fn func()) *debouncer {
	return &debouncer{delay: delay, fn: fn}
}

// poke (re)starts the wait.
func (d *debouncer) poke() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.t != nil {
		d.t.Stop()
	}
	d.t = time.AfterFunc(d.delay, d.fn)
}

// flush runs fn now if a poke is still waiting.
func (d *debouncer) flush() {
	d.mu.Lock()
	pending := d.t != nil && d.t.Stop()
	d.t = nil
	d.mu.Unlock()
	if pending {
		d.fn()
	}
}
