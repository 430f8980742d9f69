package cli

import (
	"context"

	"github.com/sbxdev/sbx/bench"
	"github.com/spf13/cobra"
)

// newBenchCode is `sbx bench code`.
func newBenchCode(g *globals) *cobra.Command {
	var cfg bench.Config
	var runscPath, templatesDir string
	var markdown bool
	cmd := &cobra.Command{
		Use:   "code",
		Short: "Measure a round trip of 1+1 through the code API (a warm kernel) against python3 -c through the commands API",
		Long: `Measure stateful code against a new interpreter: a real sbx serve, in this
process, on a temporary data directory with its own nftables table, address
pool and cgroup parent, runs one sandbox of --template (default
code-interpreter: it needs python3-ipykernel), and times --calls round trips
of 1+1 through POST …/code/execute (the default python context's warm kernel)
and of python3 -c 'print(1+1)' through POST …/commands, in turns, after 5
warm-ups each. Needs root. Progress goes to stderr; the table (or --json, or
--markdown) to stdout.`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := positive(map[string]int{"--calls": cfg.Calls}); err != nil {
				return err
			}
			if err := benchSetup(g, "code", &cfg, runscPath, templatesDir); err != nil {
				return err
			}
			return g.runBench(cmd, markdown, func(ctx context.Context) (*bench.Report, error) { return bench.Code(ctx, cfg) })
		},
	}
	f := cmd.Flags()
	benchFlags(f, &cfg, &runscPath, &templatesDir, &markdown)
	f.Lookup("template").DefValue = "code-interpreter"
	f.Set("template", "code-interpreter")
	f.IntVar(&cfg.Calls, "calls", 50, "round trips each way")
	return cmd
}
