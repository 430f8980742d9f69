package cli

import (
	"context"

	"github.com/sbxdev/sbx/bench"
	"github.com/spf13/cobra"
)

// newBenchState is `sbx bench state`.
func newBenchState(g *globals) *cobra.Command {
	var cfg bench.Config
	var runscPath, templatesDir string
	var markdown bool
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Measure warm pools, ready templates, snapshots and forks through serve's API against their floors",
		Long: `Measure branching state as a user meets it: a real sbx serve, in this process,
on a temporary data directory with its own nftables table, address pool
(10.238.0.0/16) and cgroup parent. A create from a warm pool against a cold
create (2×--rounds each); a create of a template whose start command takes 2 s
until it serves, from its ready snapshot against cold (it derives the template
bench-slow-start from --template once); a snapshot of a sandbox holding 256 MB
against runsc checkpoint --leave-running of it, with how long it stood still;
a fork of it into 10 against a runsc checkpoint and 10 runsc restores of it at
once (--rounds each, in turns). Needs root. Everything the run creates is
removed at the end. Progress goes to stderr; the table (or --json, or
--markdown) to stdout.`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := positive(map[string]int{"--rounds": cfg.Rounds}); err != nil {
				return err
			}
			if err := benchSetup(g, "state", &cfg, runscPath, templatesDir); err != nil {
				return err
			}
			return g.runBench(cmd, markdown, func(ctx context.Context) (*bench.Report, error) { return bench.State(ctx, cfg) })
		},
	}
	f := cmd.Flags()
	benchFlags(f, &cfg, &runscPath, &templatesDir, &markdown)
	f.IntVar(&cfg.Rounds, "rounds", 4, "rounds of each measure (the pool's creates: twice as many)")
	return cmd
}
