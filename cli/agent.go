package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/sbxdev/sbx/agent"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/spf13/cobra"
)

// newAgent is `sbx agent`, the in-sandbox agent: hidden, since sbx starts
// it as PID 1 of every sandbox and no one runs it by hand.
func newAgent(g *globals) *cobra.Command {
	var cfg agent.Config
	var port int
	var logLevel string
	cmd := &cobra.Command{
		Use:    "agent",
		Short:  "Serve the in-sandbox agent API (run by sbx inside every sandbox, as PID 1)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return err
			}
			cfg.Token = os.Getenv(agent.TokenEnv)
			if cfg.Token == "" {
				return errors.New("agent: $" + agent.TokenEnv + " must hold the access token")
			}
			os.Unsetenv(agent.TokenEnv) // commands inherit the environment, never the token
			cfg.Log = slog.New(slog.NewJSONHandler(g.opts.Stderr, &slog.HandlerOptions{Level: level}))
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return agent.Run(ctx, cfg, fmt.Sprintf(":%d", port))
		},
	}
	f := cmd.Flags()
	f.IntVar(&port, "port", apiv1.AgentPort, "port to serve the agent API on")
	f.StringVar(&cfg.Workdir, "workdir", agent.DefaultWorkdir, "default working directory, and base of relative paths")
	f.StringVar(&cfg.Start, "start", "", "a command line to start in the background, tagged "+agent.StartTag)
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}
