package cli

import (
	"context"

	"github.com/sbxdev/sbx/bench"
	"github.com/spf13/cobra"
)

// newBenchE2B is `sbx bench e2b`.
func newBenchE2B(g *globals) *cobra.Command {
	var cfg bench.Config
	var runscPath, templatesDir string
	var markdown bool
	cmd := &cobra.Command{
		Use:   "e2b",
		Short: "Measure E2B's envd protocol against sbx's own agent API: commands.run('true') and a 100 MB download",
		Long: `Measure the E2B compatibility layer against sbx's own API: a real sbx serve,
in this process, on a temporary data directory with its own nftables table,
address pool and cgroup parent, runs one sandbox of --template, and times, in
turns after 5 warm-ups each, --calls runs of true through envd's
Process.Start (a Connect stream, as E2B's commands.run sends it, through
serve's E2B_SANDBOX_URL routing) and through POST …/commands, then
downloads of a 100 MB file through envd's GET /files and through GET
…/files (--calls/10 times, at least 3, after 2 warm-ups). Needs root.
Progress goes to stderr; the table (or --json, or --markdown) to stdout.`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := positive(map[string]int{"--calls": cfg.Calls}); err != nil {
				return err
			}
			if err := benchSetup(g, "e2b", &cfg, runscPath, templatesDir); err != nil {
				return err
			}
			return g.runBench(cmd, markdown, func(ctx context.Context) (*bench.Report, error) { return bench.E2B(ctx, cfg) })
		},
	}
	f := cmd.Flags()
	benchFlags(f, &cfg, &runscPath, &templatesDir, &markdown)
	f.IntVar(&cfg.Calls, "calls", 50, "round trips each way")
	return cmd
}
