package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/consolidate"
	"github.com/urfave/cli/v2"
)

func consolidateCommand() *cli.Command {
	d := consolidate.DefaultLimits()
	return &cli.Command{
		Name:      "consolidate",
		Usage:     "distil session notes and merge redundant notes with a model (shows what it would do unless --apply)",
		ArgsUsage: "[RUN]",
		Description: "reflect: a project's unreflected session notes (5 or more) become durable notes that supersede\n" +
			"them; merge: redundant durable notes (5 or more in a project) are grouped, one kept or a synthesis\n" +
			"written that supersedes the rest; dedup: notes with the same body, the oldest kept. Nothing is\n" +
			"deleted: sources keep their files and history. Each applied run is one commit naming its model;\n" +
			"--log lists runs, --undo [RUN] undoes one (the newest by default) with a new commit. A proposal\n" +
			"is applied only where recall on the store's own questions (as `eval --self`) does not drop.\n" +
			"The model: ANAMNESIS_REFLECTION_PROVIDER=claude (the Claude Code CLI you are logged in to, run\n" +
			"with no tools, hooks or MCP servers) or openai/deepseek/local with _MODEL, _BASE_URL, _API_KEY,\n" +
			"or reflection.* in config.json. Text is redacted before it leaves the machine. Calls are\n" +
			"bounded per run and per day (state/consolidate-budget.json; `anamnesis status` shows the day).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "project", Usage: "only this `PROJECT`"},
			&cli.BoolFlag{Name: "apply", Usage: "apply the plan (one commit)"},
			&cli.BoolFlag{Name: "review", Usage: "keep the proposals pending for review; with no model call, list them"},
			&cli.StringFlag{Name: "accept", Usage: "apply the pending proposal `ID`"},
			&cli.StringFlag{Name: "discard", Usage: "drop the pending proposal `ID`"},
			&cli.BoolFlag{Name: "log", Usage: "list past runs"},
			&cli.BoolFlag{Name: "undo", Usage: "undo RUN (default: the newest run in force)"},
			&cli.BoolFlag{Name: "no-gate", Usage: "apply without the recall check"},
			&cli.BoolFlag{Name: "no-sync", Usage: "do not sync before and after (with a remote set)"},
			&cli.IntFlag{Name: "max-calls", Value: d.RunCalls, Usage: "model calls this run at most"},
			&cli.IntFlag{Name: "max-calls-day", Value: d.DayCalls, Usage: "model calls per day at most (0: no limit)"},
			&cli.IntFlag{Name: "max-chars-day", Value: d.DayChars, Usage: "input characters per day at most (0: no limit)"},
			&cli.Float64Flag{Name: "max-usd-day", Value: d.DayUSD, Usage: "dollars per day at most, where the backend reports cost (0: no limit)"},
			&cli.Float64Flag{Name: "max-usd-call", Value: d.CallBudget, Usage: "dollars one claude call may spend (--max-budget-usd)"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			return withStore(c, forCommand, func(ctx context.Context, s *anamnesis.Store) error {
				return runConsolidate(ctx, c, s)
			})
		},
	}
}

func consolidateLimits(c *cli.Context) consolidate.Limits {
	return consolidate.Limits{RunCalls: c.Int("max-calls"), DayCalls: c.Int("max-calls-day"), DayChars: c.Int("max-chars-day"),
		DayUSD: c.Float64("max-usd-day"), CallBudget: c.Float64("max-usd-call")}
}

func runConsolidate(ctx context.Context, c *cli.Context, s *anamnesis.Store) error {
	w := c.App.Writer
	syncing := s.Remote() != "" && !c.Bool("no-sync")
	sync := func() error {
		if !syncing {
			return nil
		}
		_, err := s.Sync(ctx, anamnesis.SyncOptions{})
		return err
	}
	switch {
	case c.Bool("log"):
		runs, err := s.ConsolidateLog(ctx, 5000)
		if err != nil || c.Bool("json") {
			return orJSON(w, c, runs, err)
		}
		if len(runs) == 0 {
			fmt.Fprintln(w, "no consolidation runs")
		}
		for _, r := range runs {
			state := ""
			if r.UndoneBy != "" {
				state = fmt.Sprintf(" (undone by %.12s)", r.UndoneBy)
			}
			fmt.Fprintf(w, "%.12s %s %s%s\n", r.Run, r.When, r.Model, state)
			for _, ch := range r.Changes {
				fmt.Fprintf(w, "  %s\n", ch)
			}
		}
		return nil
	case c.Bool("undo"):
		if err := sync(); err != nil {
			return fmt.Errorf("sync before the undo: %w", err)
		}
		head, err := s.UndoConsolidate(ctx, c.Args().First())
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "undone in commit %.12s\n", head)
		return sync()
	case c.String("accept") != "" || c.String("discard") != "":
		id, accept := c.String("accept"), true
		if id == "" {
			id, accept = c.String("discard"), false
		}
		run, err := s.ReviewPending(ctx, id, accept)
		if err != nil {
			return err
		}
		if !accept {
			fmt.Fprintf(w, "discarded %s\n", id)
			return nil
		}
		fmt.Fprintf(w, "accepted %s: commit %.12s\n", id, run)
		return sync()
	}
	if c.Bool("review") && !c.Bool("apply") {
		if pend, err := s.PendingProposals(); err != nil || len(pend) > 0 {
			if err != nil || c.Bool("json") {
				return orJSON(w, c, pend, err)
			}
			for _, p := range pend {
				fmt.Fprintf(w, "%s  %s (by %s)\n", p.ID, anamnesis.DescribeProposal(p.Proposal), p.Model)
			}
			fmt.Fprintln(w, "accept with --accept ID, drop with --discard ID")
			return nil
		}
	}
	limits := consolidateLimits(c)
	planner := &consolidate.Planner{Budget: &consolidate.Budget{Limits: limits, Path: s.ConsolidateBudgetPath(), Root: s.Home()}}
	settings := consolidate.ResolveSettings(envOf(c).getenv, s.Config().Reflection())
	planner.MaxChars = settings.MaxTokens * 4
	model, modelErr := consolidate.NewModel(settings, limits.CallBudget)
	if modelErr == nil {
		planner.Model = model
	}
	if c.Bool("apply") || c.Bool("review") {
		// Another machine may have consolidated these notes already. A dry
		// run plans from what is here and sends nothing.
		if err := sync(); err != nil {
			return fmt.Errorf("sync before consolidating (another machine may have done it): %w", err)
		}
	}
	rep, err := s.Consolidate(ctx, anamnesis.ConsolidateOptions{Project: c.String("project"), Planner: planner,
		Apply: c.Bool("apply"), Review: c.Bool("review"), NoGate: c.Bool("no-gate")})
	if err != nil {
		return err
	}
	if rep.Run != "" && syncing {
		if err := sync(); err != nil {
			return fmt.Errorf("applied in commit %.12s, but the sync failed: %w; the next sync sends it", rep.Run, err)
		}
		// Another machine may have distilled the same notes meanwhile.
		var ids []string
		for _, p := range rep.Applied {
			ids = append(ids, p.ID)
		}
		settled, err := s.SettleConsolidation(ctx, ids)
		if err != nil {
			return err
		}
		if len(settled) > 0 {
			if err := sync(); err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "another machine consolidated the same notes at once; kept one version of %s (the other is in the history)\n", strings.Join(settled, ", "))
		}
	}
	if c.Bool("json") {
		return printJSON(w, rep)
	}
	printConsolidation(w, rep, modelErr, c.Bool("apply"), c.Bool("review"))
	return nil
}

func orJSON(w io.Writer, c *cli.Context, v any, err error) error {
	if err != nil {
		return err
	}
	return printJSON(w, v)
}

func printConsolidation(w io.Writer, rep anamnesis.ConsolidateReport, modelErr error, apply, review bool) {
	if modelErr != nil {
		fmt.Fprintf(w, "no model: %v; dedup only\n", modelErr)
	}
	if rep.Plan.Model != "" {
		fmt.Fprintf(w, "model %s: %d call(s), %d input characters, $%.4f\n", rep.Plan.Model, rep.Plan.Calls, rep.Plan.Chars, rep.Plan.USD)
	}
	for _, f := range rep.Plan.Failed {
		fmt.Fprintf(w, "failed: %s; skipped\n", f)
	}
	if rep.Plan.Stopped != "" {
		fmt.Fprintf(w, "stopped: %s\n", rep.Plan.Stopped)
	}
	if len(rep.Plan.Proposals) == 0 {
		fmt.Fprintln(w, "nothing to consolidate")
		return
	}
	if !apply && !review {
		for _, p := range rep.Plan.Proposals {
			fmt.Fprintf(w, "would %s\n", anamnesis.DescribeProposal(p))
		}
		fmt.Fprintln(w, "(dry run; pass --apply, or --review to decide one by one)")
		return
	}
	if rep.GateK > 0 && rep.GateCases == 0 {
		fmt.Fprintln(w, "recall gate: no question could be built from these notes (each is a sentence of six words or more); applied without it")
	}
	if rep.GateCases > 0 {
		fmt.Fprintf(w, "recall@%d on %d own questions: %.3f -> %.3f\n", rep.GateK, rep.GateCases, rep.RecallBefore, rep.RecallAfter)
	}
	for _, p := range rep.Rejected {
		fmt.Fprintf(w, "rejected (recall would drop): %s\n", anamnesis.DescribeProposal(p))
	}
	for _, p := range rep.Applied {
		fmt.Fprintf(w, "applied: %s\n", anamnesis.DescribeProposal(p))
	}
	if rep.Run != "" {
		fmt.Fprintf(w, "run %.12s (undo: anamnesis consolidate --undo %.12s)\n", rep.Run, rep.Run)
	}
	if len(rep.Pending) > 0 {
		fmt.Fprintf(w, "%d proposal(s) pending review: anamnesis consolidate --review\n", len(rep.Pending))
	}
}
