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

// consolidateRun is one `anamnesis consolidate`: its flags, the store,
// and whether it syncs before and after (a remote, and no --no-sync).
type consolidateRun struct {
	c       *cli.Context
	s       *anamnesis.Store
	w       io.Writer
	syncing bool
}

func runConsolidate(ctx context.Context, c *cli.Context, s *anamnesis.Store) error {
	r := consolidateRun{c: c, s: s, w: c.App.Writer, syncing: s.Remote() != "" && !c.Bool("no-sync")}
	switch {
	case c.Bool("log"):
		return r.log(ctx)
	case c.Bool("undo"):
		return r.undo(ctx)
	case c.String("accept") != "" || c.String("discard") != "":
		return r.decide(ctx)
	}
	if c.Bool("review") && !c.Bool("apply") {
		// --review with proposals pending lists them; with none it plans
		// new ones.
		if listed, err := r.listPending(); listed || err != nil {
			return err
		}
	}
	return r.consolidate(ctx)
}

// sync syncs when the run syncs.
func (r consolidateRun) sync(ctx context.Context) error {
	if !r.syncing {
		return nil
	}
	_, err := r.s.Sync(ctx, anamnesis.SyncOptions{})
	return err
}

// log is --log: past runs, newest first, and what each changed.
func (r consolidateRun) log(ctx context.Context) error {
	runs, err := r.s.ConsolidateLog(ctx, 5000)
	if err != nil || r.c.Bool("json") {
		return orJSON(r.w, r.c, runs, err)
	}
	if len(runs) == 0 {
		fmt.Fprintln(r.w, "no consolidation runs")
	}
	for _, run := range runs {
		state := ""
		if run.UndoneBy != "" {
			state = fmt.Sprintf(" (undone by %.12s)", run.UndoneBy)
		}
		fmt.Fprintf(r.w, "%.12s %s %s%s\n", run.Run, run.When, run.Model, state)
		for _, ch := range run.Changes {
			fmt.Fprintf(r.w, "  %s\n", ch)
		}
	}
	return nil
}

// undo is --undo [RUN], between two syncs.
func (r consolidateRun) undo(ctx context.Context) error {
	if err := r.sync(ctx); err != nil {
		return fmt.Errorf("sync before the undo: %w", err)
	}
	head, err := r.s.UndoConsolidate(ctx, r.c.Args().First())
	if err != nil {
		return err
	}
	fmt.Fprintf(r.w, "undone in commit %.12s\n", head)
	return r.sync(ctx)
}

// decide is --accept ID or --discard ID of a pending proposal.
func (r consolidateRun) decide(ctx context.Context) error {
	id, accept := r.c.String("accept"), true
	if id == "" {
		id, accept = r.c.String("discard"), false
	}
	run, err := r.s.ReviewPending(ctx, id, accept)
	if err != nil {
		return err
	}
	if !accept {
		fmt.Fprintf(r.w, "discarded %s\n", id)
		return nil
	}
	fmt.Fprintf(r.w, "accepted %s: commit %.12s\n", id, run)
	return r.sync(ctx)
}

// listPending prints the proposals pending review; listed is false when
// there are none.
func (r consolidateRun) listPending() (listed bool, err error) {
	pend, err := r.s.PendingProposals()
	if err != nil || len(pend) == 0 {
		return false, err
	}
	if r.c.Bool("json") {
		return true, printJSON(r.w, pend)
	}
	for _, p := range pend {
		fmt.Fprintf(r.w, "%s  %s (by %s)\n", p.ID, anamnesis.DescribeProposal(p.Proposal), p.Model)
	}
	fmt.Fprintln(r.w, "accept with --accept ID, drop with --discard ID")
	return true, nil
}

// planner is the run's planner: the budget of --max-* and its state
// file, and the model the settings name (modelErr when there is none:
// the plan is then dedup only).
func (r consolidateRun) planner() (planner *consolidate.Planner, modelErr error) {
	limits := consolidateLimits(r.c)
	planner = &consolidate.Planner{Budget: &consolidate.Budget{Limits: limits, Path: r.s.ConsolidateBudgetPath(), Root: r.s.Home()}}
	settings := consolidate.ResolveSettings(envOf(r.c).getenv, r.s.Config().Reflection())
	planner.MaxChars = settings.MaxTokens * 4
	model, modelErr := consolidate.NewModel(settings, limits.CallBudget)
	if modelErr == nil {
		planner.Model = model
	}
	return planner, modelErr
}

// consolidate plans, and with --apply or --review applies or keeps the
// plan, between syncs.
func (r consolidateRun) consolidate(ctx context.Context) error {
	planner, modelErr := r.planner()
	apply, review := r.c.Bool("apply"), r.c.Bool("review")
	if apply || review {
		// Another machine may have consolidated these notes already. A dry
		// run plans from what is here and sends nothing.
		if err := r.sync(ctx); err != nil {
			return fmt.Errorf("sync before consolidating (another machine may have done it): %w", err)
		}
	}
	rep, err := r.s.Consolidate(ctx, anamnesis.ConsolidateOptions{Project: r.c.String("project"), Planner: planner,
		Apply: apply, Review: review, NoGate: r.c.Bool("no-gate")})
	if err != nil {
		return err
	}
	if rep.Run != "" && r.syncing {
		if err := r.share(ctx, rep); err != nil {
			return err
		}
	}
	if r.c.Bool("json") {
		return printJSON(r.w, rep)
	}
	printConsolidation(r.w, rep, modelErr, apply, review)
	return nil
}

// share sends an applied run to the remote, then settles it against a
// run another machine made of the same notes meanwhile.
func (r consolidateRun) share(ctx context.Context, rep anamnesis.ConsolidateReport) error {
	if err := r.sync(ctx); err != nil {
		return fmt.Errorf("applied in commit %.12s, but the sync failed: %w; the next sync sends it", rep.Run, err)
	}
	var ids []string
	for _, p := range rep.Applied {
		ids = append(ids, p.ID)
	}
	settled, err := r.s.SettleConsolidation(ctx, ids)
	if err != nil || len(settled) == 0 {
		return err
	}
	if err := r.sync(ctx); err != nil {
		return err
	}
	fmt.Fprintf(r.c.App.ErrWriter, "another machine consolidated the same notes at once; kept one version of %s (the other is in the history)\n", strings.Join(settled, ", "))
	return nil
}

func orJSON(w io.Writer, c *cli.Context, v any, err error) error {
	if err != nil {
		return err
	}
	return printJSON(w, v)
}

func printConsolidation(w io.Writer, rep anamnesis.ConsolidateReport, modelErr error, apply, review bool) {
	printPlanCost(w, rep.Plan, modelErr)
	switch {
	case len(rep.Plan.Proposals) == 0:
		fmt.Fprintln(w, "nothing to consolidate")
	case !apply && !review:
		for _, p := range rep.Plan.Proposals {
			fmt.Fprintf(w, "would %s\n", anamnesis.DescribeProposal(p))
		}
		fmt.Fprintln(w, "(dry run; pass --apply, or --review to decide one by one)")
	default:
		printApplied(w, rep)
	}
}

// printPlanCost says what planning cost and what went wrong in it.
func printPlanCost(w io.Writer, plan consolidate.Plan, modelErr error) {
	if modelErr != nil {
		fmt.Fprintf(w, "no model: %v; dedup only\n", modelErr)
	}
	if plan.Model != "" {
		fmt.Fprintf(w, "model %s: %d call(s), %d input characters, $%.4f\n", plan.Model, plan.Calls, plan.Chars, plan.USD)
	}
	for _, f := range plan.Failed {
		fmt.Fprintf(w, "failed: %s; skipped\n", f)
	}
	if plan.Stopped != "" {
		fmt.Fprintf(w, "stopped: %s\n", plan.Stopped)
	}
}

// printApplied says what the recall gate found and what was applied,
// rejected or kept for review.
func printApplied(w io.Writer, rep anamnesis.ConsolidateReport) {
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
