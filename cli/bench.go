package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sbxdev/sbx/bench"
	"github.com/sbxdev/sbx/local/runsc"
	"github.com/sbxdev/sbx/template"
	"github.com/spf13/cobra"
)

// newBench is the `sbx bench` command group: figures as ratios to baselines
// measured in the same run.
func newBench(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Measure sbx against baselines taken in the same run"}
	cmd.PersistentFlags().StringVar(&g.dataDir, "data-dir", env("SBX_DATA_DIR", "/var/lib/sbx"), "data dir of sbx serve, where its templates and runsc are ($SBX_DATA_DIR)")
	cmd.AddCommand(newBenchLifecycle(g))
	return cmd
}

func newBenchLifecycle(g *globals) *cobra.Command {
	var cfg bench.Config
	var runscPath, templatesDir, idle string
	var markdown bool
	cmd := &cobra.Command{
		Use:   "lifecycle",
		Short: "Measure the local gVisor provider's create, pause, hibernate and idle memory against runsc, runc and docker",
		Long: `Measure the local gVisor provider, set up as sbx serve sets it up but with
its own nftables table, address pool (10.238.0.0/16), cgroup parent and a
temporary data directory, against baselines measured in the same run on the
same template tree: create→running against runsc and runc run --detach (and
docker run when a dockerd answers), pause and resume against runsc pause and
resume, hibernate and wake of sandboxes holding 64 MB and 512 MB against
runsc checkpoint and restore, and host memory per idle sandbox with each
--idle count held at once. Needs root. Everything the run creates is removed
at the end, also on error or Ctrl-C. Progress goes to stderr; the table (or
--json, or --markdown) to stdout.`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			counts, err := parseCounts(idle)
			if err != nil {
				return usagef("--idle: %v", err)
			}
			cfg.Idle = counts
			if os.Geteuid() != 0 {
				return fmt.Errorf("sbx bench lifecycle runs sandboxes and needs root")
			}
			if cfg.Runsc, err = runsc.Find(runscPath, g.dataDir); err != nil {
				return err
			}
			build := fmt.Sprintf("sbx template build %s --data-dir %s", cfg.Template, g.dataDir)
			if templatesDir == "" {
				templatesDir = g.templates().Dir
			} else if filepath.Base(templatesDir) == "templates" {
				build = fmt.Sprintf("sbx template build %s --data-dir %s", cfg.Template, filepath.Dir(templatesDir))
			}
			cfg.Templates = template.Store{Dir: templatesDir}
			if _, err := cfg.Templates.Current(cfg.Template); err != nil {
				if _, missing := os.Lstat(filepath.Join(templatesDir, cfg.Template, "current")); os.IsNotExist(missing) {
					return fmt.Errorf("template %s is not built in %s: run `%s` first, or name the data dir that has it with --data-dir (or --templates-dir)",
						cfg.Template, templatesDir, build)
				}
				return err
			}
			cfg.Progress = g.opts.Stderr
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			r, err := bench.Lifecycle(ctx, cfg)
			if len(r.Rows) > 0 {
				var shown error
				if markdown && !g.json {
					shown = r.WriteMarkdown(g.opts.Stdout)
				} else {
					shown = g.show(r, func(w io.Writer) error { return r.WriteTable(w) })
				}
				if err == nil {
					err = shown
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&runscPath, "runsc", os.Getenv("SBX_RUNSC"), "gVisor runsc binary (default <data-dir>/bin/runsc, then PATH) ($SBX_RUNSC)")
	f.StringVar(&templatesDir, "templates-dir", "", "templates directory (default <data-dir>/templates)")
	f.StringVar(&cfg.Template, "template", "base", "template the sandboxes and baselines run")
	f.IntVar(&cfg.N, "n", 20, "sandboxes created per runtime, and pause/resume rounds")
	f.IntVar(&cfg.Rounds, "rounds", 4, "hibernate/wake rounds per size")
	f.StringVar(&idle, "idle", "50,200", "idle sandbox counts to measure, each held at once")
	f.BoolVar(&cfg.SkipIdle, "skip-idle", false, "skip the idle memory measurement")
	f.BoolVar(&markdown, "markdown", false, "print the table as Markdown")
	return cmd
}

// parseCounts parses a comma-separated list of positive counts.
func parseCounts(s string) ([]int, error) {
	var counts []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive count", part)
		}
		counts = append(counts, n)
	}
	return counts, nil
}
