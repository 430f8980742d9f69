package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/sbxdev/sbx/agent"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/echoserver"
	"github.com/spf13/cobra"
)

// newAgent is `sbx agent`, the in-sandbox agent: hidden, since sbx starts
// it as PID 1 of every sandbox and no one runs it by hand.
func newAgent(g *globals) *cobra.Command {
	var cfg agent.Config
	var port, tokenFD int
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
			if tokenFD < 3 {
				return errors.New("agent: --token-fd must name the descriptor (3 or more) that holds the access token")
			}
			token, err := agent.ReadToken(tokenFD)
			if err != nil {
				return err
			}
			cfg.Token = token
			cfg.Log = slog.New(slog.NewJSONHandler(g.opts.Stderr, &slog.HandlerOptions{Level: level}))
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return agent.Run(ctx, cfg, fmt.Sprintf(":%d", port))
		},
	}
	f := cmd.Flags()
	f.IntVar(&port, "port", apiv1.AgentPort, "port to serve the agent API on")
	f.IntVar(&tokenFD, "token-fd", -1, "an open descriptor to read the access token from, to its end (then closed): the token is never in the environment, argv or a file")
	f.StringVar(&cfg.User, "user", "", "the user commands, PTYs and new files belong to unless a request names another (default: the agent's own)")
	f.StringVar(&cfg.Workdir, "workdir", agent.DefaultWorkdir, "default working directory, and base of relative paths")
	f.StringVar(&cfg.Start, "start", "", "a command line to start in the background, tagged "+agent.StartTag)
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	cmd.AddCommand(newAgentEcho())
	return cmd
}

// newAgentEcho is `sbx agent echo PORT…`: an HTTP and WebSocket echo
// server (package echoserver) that the preview tests and `sbx bench
// preview` start in a sandbox, where the agent's binary always is.
func newAgentEcho() *cobra.Command {
	return &cobra.Command{
		Use:    "echo PORT...",
		Short:  "Serve an HTTP and WebSocket echo server on each port (for tests and sbx bench preview)",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ports []int
			for _, a := range args {
				p, err := strconv.Atoi(a)
				if err != nil || p < 1 || p > 65535 {
					return fmt.Errorf("agent echo: %q is not a port", a)
				}
				ports = append(ports, p)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return echoserver.Serve(ctx, ports)
		},
	}
}
