package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/urfave/cli/v2"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show note counts, index state and sync state",
		Flags: []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			return withStore(c, forCommand, func(ctx context.Context, s *anamnesis.Store) error {
				st, err := s.Status(ctx)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c.App.Writer, st)
				}
				printStatus(c.App.Writer, st)
				return nil
			})
		},
	}
}

// printStatus is status's text: notes, index, sync, then what there is
// of native memories, vectors, the tailnet and consolidation.
func printStatus(w io.Writer, st anamnesis.Status) {
	fmt.Fprintf(w, "home:    %s\n", st.Home)
	fmt.Fprintf(w, "notes:   %d (%s; %s)\n", st.Notes.Total, counts(st.Notes.ByType, note.Types()),
		counts(st.Notes.ByScope, []string{note.ScopePortable, note.ScopeMachineLocal}))
	printIndexStatus(w, st.Index)
	printSyncStatus(w, st.Sync)
	if len(st.Native) > 0 {
		total := 0
		var parts []string
		for _, n := range st.Native {
			total += n.Notes
			parts = append(parts, fmt.Sprintf("%s from %s %d", n.Project, n.MachineID, n.Notes))
		}
		fmt.Fprintf(w, "native:  %s imported from Claude Code's auto memory (%s)\n", textfmt.Count(total, "memory", "memories"), strings.Join(parts, ", "))
	}
	if v := st.Vectors; v != nil {
		fmt.Fprintf(w, "vectors: %d notes embedded with %s, %d not yet\n", v.With, v.Model, v.Without)
	}
	fmt.Fprintf(w, "tailnet: %s\n", st.Sync.Tailnet)
	if cs := st.Consolidation; cs.Today.Calls > 0 || cs.Pending > 0 {
		fmt.Fprintf(w, "consolidate: today %d model call(s), %d input characters, $%.4f; %d proposal(s) pending review\n",
			cs.Today.Calls, cs.Today.Chars, cs.Today.USD, cs.Pending)
	}
}

// printIndexStatus is status's index line and the files it skipped.
func printIndexStatus(w io.Writer, ix anamnesis.IndexStatus) {
	last := ix.LastIndexedCommit
	if last == "" {
		last = "none"
	}
	fmt.Fprintf(w, "index:   %s (%s, last indexed commit %s)\n", ix.Path, textfmt.Count(ix.Notes, "note", "notes"), last)
	if n := len(ix.Skipped); n > 0 {
		fmt.Fprintf(w, "skipped: %s not indexed:\n", textfmt.Count(n, "file", "files"))
		for _, f := range ix.Skipped {
			fmt.Fprintf(w, "  %s: %s\n", f.Path, f.Error)
		}
	}
}

// printSyncStatus is status's sync lines: the remote, the head, and the
// conflicts waiting.
func printSyncStatus(w io.Writer, sy anamnesis.SyncStatus) {
	remote := sy.Remote
	if remote == "" {
		remote = "none (local only)"
	}
	fmt.Fprintf(w, "sync:    remote %s\n", remote)
	if sy.Head != "" {
		dirty := ""
		if sy.Dirty {
			dirty = " (uncommitted changes; the next sync commits them)"
		}
		fmt.Fprintf(w, "         head %s%s\n", sy.Head[:12], dirty)
	}
	if n := len(sy.ConflictCopies); n > 0 {
		fmt.Fprintf(w, "         %s waiting to be reconciled:\n", textfmt.Count(n, "conflict copy", "conflict copies"))
		for _, p := range sy.ConflictCopies {
			fmt.Fprintf(w, "           %s\n", p)
		}
	}
	for _, c := range sy.Conflicts {
		if len(c.Copies) > 0 {
			fmt.Fprintf(w, "         conflict: %s has %s (`anamnesis resolve %s --keep ID`)\n", c.ID, textfmt.Count(len(c.Copies), "copy", "copies")+" "+strings.Join(c.Copies, ", "), c.ID)
		} else {
			fmt.Fprintf(w, "         conflict: %s and %s both replace %s (`anamnesis resolve %s --keep ID`)\n", c.ID, strings.Join(c.Rivals, ", "), c.Replaces, c.Replaces)
		}
	}
}

func counts(m map[string]int, order []string) string {
	var parts []string
	seen := map[string]bool{}
	for _, k := range order {
		seen[k] = true
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	var rest []string
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
