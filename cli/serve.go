package cli

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sbxdev/sbx/server"
	"github.com/spf13/cobra"
)

func newServe(g *globals) *cobra.Command {
	cfg := server.Config{}
	var logLevel string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the sbx control plane: REST API, ledger, reaper",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return err
			}
			cfg.Log = slog.New(slog.NewJSONHandler(g.opts.Stderr, &slog.HandlerOptions{Level: level}))
			cfg.Out = g.opts.Stdout
			cfg.Providers = g.opts.Providers
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return server.Run(ctx, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", env("SBX_DATA_DIR", server.DefaultDataDir), "where the ledger and keys live ($SBX_DATA_DIR)")
	f.StringVar(&cfg.Listen, "listen", env("SBX_LISTEN", server.DefaultListen), "address of the API ($SBX_LISTEN)")
	f.StringVar(&cfg.PublicURL, "public-url", os.Getenv("SBX_PUBLIC_URL"), "URL clients use to reach this server (default http://<listen>) ($SBX_PUBLIC_URL)")
	f.StringVar(&cfg.Domain, "domain", env("SBX_DOMAIN", "sbx.localhost"), "domain of preview and runtime URLs ($SBX_DOMAIN)")
	f.StringVar(&cfg.DefaultProvider, "provider", env("SBX_PROVIDER", "local"), "provider new sandboxes run on ($SBX_PROVIDER)")
	f.StringVar(&cfg.Runsc, "runsc", os.Getenv("SBX_RUNSC"), "gVisor runsc binary (default <data-dir>/bin/runsc, then PATH) ($SBX_RUNSC)")
	f.DurationVar(&cfg.MaxTimeout, "max-timeout", 24*time.Hour, "the longest timeout a sandbox may have")
	f.StringVar(&logLevel, "log-level", env("SBX_LOG_LEVEL", "info"), "debug, info, warn or error ($SBX_LOG_LEVEL)")
	return cmd
}

// env returns the environment variable name, or def when it is empty.
func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
