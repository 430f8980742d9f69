package cli

import (
	"context"

	"github.com/sbxdev/sbx/bench"
	"github.com/spf13/cobra"
)

// newBenchSDK is `sbx bench sdk`.
func newBenchSDK(g *globals) *cobra.Command {
	var cfg bench.Config
	var runscPath, templatesDir string
	var markdown bool
	cmd := &cobra.Command{
		Use:   "sdk",
		Short: "Measure the TypeScript and Python SDKs against the Go client: create, run true, delete",
		Long: `Measure the SDKs' overhead: a real sbx serve, in this process, on a temporary
data directory with its own nftables table, address pool and cgroup parent,
and the same loop, create a sandbox of --template (waiting until it is
ready), run true in it, delete it,
--n times through each of the Go client (in this process), the TypeScript SDK
(--sdk-dir/typescript/bench.mjs, run by --node, on its built dist) and the
Python SDK (--sdk-dir/python/bench.py, run by --python), in 3 rounds taken
in turn, each client's loop after 2 warm-ups. Each operation's p50 is
compared with the Go client's. Needs root. Progress goes to stderr; the
table (or --json, or --markdown) to stdout.`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := positive(map[string]int{"--n": cfg.N}); err != nil {
				return err
			}
			if err := benchSetup(g, "sdk", &cfg, runscPath, templatesDir); err != nil {
				return err
			}
			return g.runBench(cmd, markdown, func(ctx context.Context) (*bench.Report, error) { return bench.SDK(ctx, cfg) })
		},
	}
	f := cmd.Flags()
	benchFlags(f, &cfg, &runscPath, &templatesDir, &markdown)
	f.IntVar(&cfg.N, "n", 30, "loops through each client")
	f.StringVar(&cfg.SDKDir, "sdk-dir", "sdk", "the SDKs' directory (the repository's sdk/, its TypeScript SDK built)")
	f.StringVar(&cfg.Node, "node", "node", "the Node.js that runs the TypeScript SDK")
	f.StringVar(&cfg.Python, "python", "python3", "the Python that runs the Python SDK (with httpx and websockets)")
	return cmd
}
