package cli

import (
	"github.com/sbxdev/sbx/agent"
	"github.com/spf13/cobra"
)

// newAgent is `sbx agent`, the in-sandbox agent: hidden, since sbx starts
// it as PID 1 of every sandbox and no one runs it by hand. Its command line
// is package agent's (agent.Main), which the agent-only build
// (cmd/sbx-agent) shares.
func newAgent(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:                "agent",
		Short:              "Serve the in-sandbox agent API (run by sbx inside every sandbox, as PID 1)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := agent.Main(cmd.Context(), args, g.opts.Stderr); code != 0 {
				return &exitError{code}
			}
			return nil
		},
	}
}
