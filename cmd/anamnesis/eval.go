package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/eval"
	"github.com/urfave/cli/v2"
)

func evalCommand() *cli.Command {
	return &cli.Command{
		Name:  "eval",
		Usage: "measure recall: recall@k, MRR, latency and injected tokens on a query set",
		Description: "--dataset FILE reads JSONL, one {\"query\": \"...\", \"relevant\": [\"note id\", ...]} per line\n" +
			"(optional \"group\" reports a subset separately). --self builds queries from your own notes:\n" +
			"one sentence of a note must bring that note back. recall@k is the fraction of a query's\n" +
			"relevant notes found in the top k; MRR is 1/rank of the first relevant note in the top max(k);\n" +
			"tokens are characters/4 of the top k notes, a rough estimate of what injecting them costs.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dataset", Usage: "JSONL query set"},
			&cli.BoolFlag{Name: "self", Usage: "build the query set from this store's notes"},
			&cli.IntFlag{Name: "n", Value: 200, Usage: "with --self: how many queries"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "with --self: which notes and sentences are drawn"},
			&cli.StringFlag{Name: "k", Value: "1,3,5,10", Usage: "cut-offs, comma-separated"},
			&cli.StringFlag{Name: "mode", Usage: "`MODE`: hybrid, vec or fts (default: hybrid with an embedder, else fts); the semantic modes fail if the embedder does not answer"},
			decayFlag(),
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			if (c.String("dataset") == "") == !c.Bool("self") {
				return usagef("give --dataset FILE or --self")
			}
			if err := atLeastOne(c, "n", ""); err != nil {
				return err
			}
			var ks []int
			for _, p := range strings.Split(c.String("k"), ",") {
				k, err := strconv.Atoi(strings.TrimSpace(p))
				if err != nil || k < 1 || k > 100 {
					return usagef("-k %q is not a cut-off between 1 and 100", p)
				}
				ks = append(ks, k)
			}
			return withStore(c, forCommand, func(ctx context.Context, s *anamnesis.Store) error {
				var cases []eval.Case
				var what string
				if c.Bool("self") {
					var err error
					if cases, err = s.SelfCases(ctx, c.Int("n"), c.Int64("seed")); err != nil {
						return err
					}
					if len(cases) == 0 {
						return fmt.Errorf("no note has a sentence of six words or more to build a query from")
					}
					what = "self-eval (one sentence of each sampled note)"
				} else {
					f, err := os.Open(c.String("dataset"))
					if err != nil {
						return fmt.Errorf("open dataset: %w", err)
					}
					cases, err = eval.ReadDataset(f)
					f.Close()
					if err != nil {
						return err
					}
					what = c.String("dataset")
				}
				rep, err := s.Evaluate(ctx, cases, ks, c.String("mode"))
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c.App.Writer, rep)
				}
				printReport(c, what, rep)
				return nil
			})
		},
	}
}

func printReport(c *cli.Context, what string, r *eval.Report) {
	w := c.App.Writer
	fmt.Fprintf(w, "eval: %d queries from %s, %s search\n", r.Cases, what, r.Mode)
	line := func(name string, r *eval.Report) {
		var parts []string
		for _, k := range r.Ks {
			parts = append(parts, fmt.Sprintf("recall@%d %.3f", k, r.Recall[fmt.Sprint(k)]))
		}
		fmt.Fprintf(w, "  %s%s  MRR %.3f  (n=%d)\n", name, strings.Join(parts, "  "), r.MRR, r.Cases)
	}
	line("", r)
	var groups []string
	for g := range r.Groups {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		line(g+": ", r.Groups[g])
	}
	fmt.Fprintf(w, "  latency mean %.2f ms, p95 %.2f ms\n", r.MeanLatency, r.P95Latency)
	var toks []string
	for _, k := range r.Ks {
		toks = append(toks, fmt.Sprintf("top %d: %.0f", k, r.Tokens[fmt.Sprint(k)]))
	}
	fmt.Fprintf(w, "  tokens injected (characters/4): %s\n", strings.Join(toks, ", "))
}
