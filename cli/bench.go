package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sbxdev/sbx/bench"
	"github.com/sbxdev/sbx/docker"
	"github.com/sbxdev/sbx/internal/hostserve"
	"github.com/sbxdev/sbx/local/runsc"
	"github.com/sbxdev/sbx/template"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newBench is the `sbx bench` command group: figures as ratios to baselines
// measured in the same run.
func newBench(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Measure sbx against baselines taken in the same run"}
	cmd.PersistentFlags().StringVar(&g.dataDir, "data-dir", env("SBX_DATA_DIR", hostserve.DataDir), "data dir of sbx serve, where its templates and runsc are ($SBX_DATA_DIR)")
	cmd.AddCommand(newBenchLifecycle(g), newBenchExec(g), newBenchPreview(g), newBenchState(g), newBenchCode(g), newBenchE2B(g), newBenchSDK(g), newBenchSpawn())
	return cmd
}

func newBenchLifecycle(g *globals) *cobra.Command {
	var cfg bench.Config
	var runscPath, templatesDir, idle, provider string
	var markdown bool
	cmd := &cobra.Command{
		Use:   "lifecycle",
		Short: "Measure the local gVisor provider's create, pause, hibernate and idle memory against runsc, runc and docker, the docker provider against docker run, or the kubernetes provider against bare pods",
		Long: `Measure the local gVisor provider, set up as sbx serve sets it up but with
its own nftables table, address pool (10.238.0.0/16), cgroup parent and a
temporary data directory, against baselines measured in the same run on the
same template tree: create→running against runsc and runc run --detach (and
docker run when a dockerd answers), pause and resume against runsc pause and
resume, hibernate and wake of sandboxes holding 64 MB and 512 MB against
runsc checkpoint and restore, and host memory per idle sandbox with each
--idle count held at once. When a Docker daemon answers at --docker-host,
also the docker provider (set up as serve sets it up, under an instance name
of the run's own) against docker run of the same image through the Engine
API with the same agent as the first process, both timed until the agent
answers, and its pause and resume against docker pause and unpause. With
--e2b-api-url (and $E2B_API_KEY), also the e2b provider against direct
calls of that API: a create timed until envd answers, pause, and resume
(connect). The
sandboxes run this binary as their agent, as serve runs them. Needs root.

With --provider kubernetes, only the kubernetes provider is measured (set
up as serve sets it up, in a namespace the run makes and deletes) against
bare pods of the same image (--k8s-template), RuntimeClass and resources in
the same cluster: create→agent ready against a bare pod's create→Ready and
against a bare pod with a claim of the same StorageClass, --n times each in
turns, and --k8s-parallel of each at once, --rounds times. It needs no root.

Everything the run creates is removed at the end, also on error or Ctrl-C.
Progress goes to stderr; the table (or --json, or --markdown) to stdout.`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			counts, err := parseCounts(idle)
			if err != nil {
				return usagef("--idle: %v", err)
			}
			cfg.Idle = counts
			if err := positive(map[string]int{"--n": cfg.N, "--rounds": cfg.Rounds}); err != nil {
				return err
			}
			switch provider {
			case "kubernetes":
				return g.runKubernetesBench(cmd, cfg, markdown)
			case "", "local":
			default:
				return usagef("--provider %q: local (the default: local, and docker and e2b where they answer) or kubernetes", provider)
			}
			if err := benchSetup(g, "lifecycle", &cfg, runscPath, templatesDir); err != nil {
				return err
			}
			return g.runBench(cmd, markdown, func(ctx context.Context) (*bench.Report, error) { return bench.Lifecycle(ctx, cfg) })
		},
	}
	f := cmd.Flags()
	benchFlags(f, &cfg, &runscPath, &templatesDir, &markdown)
	f.IntVar(&cfg.N, "n", 20, "sandboxes created per runtime, and pause/resume rounds")
	f.IntVar(&cfg.Rounds, "rounds", 4, "hibernate/wake rounds per size")
	f.StringVar(&idle, "idle", "50,200", "idle sandbox counts to measure, each held at once")
	f.BoolVar(&cfg.SkipIdle, "skip-idle", false, "skip the idle memory measurement")
	f.StringVar(&cfg.DockerHost, "docker-host", env("SBX_DOCKER_HOST", docker.DefaultHost), "the Docker daemon of the docker provider's contender and the docker run baselines, skipped when none answers: unix:///path/to/docker.sock or tcp://host:port ($SBX_DOCKER_HOST)")
	f.StringVar(&cfg.E2B.APIURL, "e2b-api-url", os.Getenv("SBX_E2B_API_URL"), "an E2B API (E2B's, or another sbx serve's /e2b) on which to measure the e2b provider against direct calls of it, with the key in $E2B_API_KEY; default: skipped ($SBX_E2B_API_URL)")
	f.StringVar(&cfg.E2B.SandboxURL, "e2b-sandbox-url", os.Getenv("SBX_E2B_SANDBOX_URL"), "where both reach every sandbox's envd, as serve's --e2b-sandbox-url ($SBX_E2B_SANDBOX_URL)")
	f.StringVar(&cfg.E2B.Domain, "e2b-domain", env("SBX_E2B_DOMAIN", "e2b.app"), "the sandboxes' domain when the API names none ($SBX_E2B_DOMAIN)")
	f.StringVar(&cfg.E2B.Template, "e2b-template", "", "the E2B template both create from (default --template)")
	cfg.E2B.APIKey = os.Getenv("E2B_API_KEY")
	f.StringVar(&provider, "provider", "local", "what to measure: local (the local provider, and the docker and e2b providers where they answer) or kubernetes (only the kubernetes provider, against bare pods: --k8s-…)")
	kubernetesBenchFlags(f, &cfg.Kubernetes)
	return cmd
}

func newBenchExec(g *globals) *cobra.Command {
	var cfg bench.Config
	var runscPath, templatesDir string
	var markdown bool
	cmd := &cobra.Command{
		Use:   "exec",
		Short: "Measure commands and file transfers through serve's API against runsc exec",
		Long: `Measure the agent's data plane as a user meets it: a real sbx serve, in this
process, on a temporary data directory with its own nftables table, address
pool (10.238.0.0/16) and cgroup parent, runs one sandbox, and the Go client
drives its agent through the API over loopback. The baseline is runsc exec
of the same work in the same sandbox, in turns with it: the round trip of
true (--calls times), reading a command's --output-mb of stdout, and
uploading and downloading a --file-mb file (each --rounds times). Needs
root. Everything the run creates is removed at the end, also on error or
Ctrl-C. Progress goes to stderr; the table (or --json, or --markdown) to
stdout.`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := positive(map[string]int{"--calls": cfg.Calls, "--output-mb": cfg.OutputMB, "--file-mb": cfg.FileMB, "--rounds": cfg.Rounds}); err != nil {
				return err
			}
			if err := benchSetup(g, "exec", &cfg, runscPath, templatesDir); err != nil {
				return err
			}
			if cfg.Agent == "" { // it runs `sbx bench spawn` in its sandbox
				var err error
				if cfg.Agent, err = os.Executable(); err != nil {
					return fmt.Errorf("finding the sbx binary to run as the sandbox's agent: %w", err)
				}
			}
			return g.runBench(cmd, markdown, func(ctx context.Context) (*bench.Report, error) { return bench.Exec(ctx, cfg) })
		},
	}
	f := cmd.Flags()
	benchFlags(f, &cfg, &runscPath, &templatesDir, &markdown)
	f.IntVar(&cfg.Calls, "calls", 200, "round trips of true each way")
	f.IntVar(&cfg.OutputMB, "output-mb", 100, "MB of stdout the throughput command writes")
	f.IntVar(&cfg.FileMB, "file-mb", 256, "MB of the file uploaded and downloaded")
	f.IntVar(&cfg.Rounds, "rounds", 4, "timed rounds of each transfer, each way")
	return cmd
}

func newBenchPreview(g *globals) *cobra.Command {
	var cfg bench.Config
	var runscPath, templatesDir string
	var markdown bool
	cmd := &cobra.Command{
		Use:   "preview",
		Short: "Measure preview URLs against requests sent straight to the sandbox, and a wake by request against resume",
		Long: `Measure preview traffic as a browser or a script meets it: a real sbx serve,
in this process, on a temporary data directory with its own nftables table,
address pool (10.238.0.0/16) and cgroup parent, runs one sandbox with an
HTTP echo server on port 8080 (sbx agent echo). The host reaches it through
serve's preview host with the sandbox's traffic token, and, as the
baseline, straight at the sandbox's address, in turns: --calls small
requests on kept-alive connections, and --rounds downloads of --file-mb.
Then, --rounds times, the sandbox holding 64 MB is hibernated and woken,
once by a preview request and once by the API's resume. Needs root.
Everything the run creates is removed at the end, also on error or Ctrl-C.
Progress goes to stderr; the table (or --json, or --markdown) to stdout.`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := positive(map[string]int{"--calls": cfg.Calls, "--file-mb": cfg.FileMB, "--rounds": cfg.Rounds}); err != nil {
				return err
			}
			if err := benchSetup(g, "preview", &cfg, runscPath, templatesDir); err != nil {
				return err
			}
			return g.runBench(cmd, markdown, func(ctx context.Context) (*bench.Report, error) { return bench.Preview(ctx, cfg) })
		},
	}
	f := cmd.Flags()
	benchFlags(f, &cfg, &runscPath, &templatesDir, &markdown)
	f.IntVar(&cfg.Calls, "calls", 500, "small requests each way")
	f.IntVar(&cfg.FileMB, "file-mb", 256, "MB of each download")
	f.IntVar(&cfg.Rounds, "rounds", 4, "timed downloads each way, and wakes each way")
	return cmd
}

// benchFlags are the flags every bench takes.
func benchFlags(f *pflag.FlagSet, cfg *bench.Config, runscPath, templatesDir *string, markdown *bool) {
	f.StringVar(runscPath, "runsc", os.Getenv("SBX_RUNSC"), "gVisor runsc binary (default <data-dir>/bin/runsc, then PATH) ($SBX_RUNSC)")
	f.StringVar(templatesDir, "templates-dir", "", "templates directory (default <data-dir>/templates)")
	f.StringVar(&cfg.Template, "template", "base", "template the sandboxes and baselines run")
	f.BoolVar(markdown, "markdown", false, "print the table as Markdown")
	f.StringVar(&cfg.Agent, "agent", "", "the binary the sandboxes run as `BIN agent …`, to compare another build's cost (default: the agent serve runs; for exec, this sbx)")
}

// benchSetup checks that the bench can run here and fills in what cfg runs
// with: runsc and the templates (with a clear error when the template is not
// built).
func benchSetup(g *globals, name string, cfg *bench.Config, runscPath, templatesDir string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("sbx bench %s runs sandboxes and needs root", name)
	}
	var err error
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
	return nil
}

// runBench runs a bench until it ends or Ctrl-C, and shows its report,
// also the part measured before an error.
func (g *globals) runBench(cmd *cobra.Command, markdown bool, run func(context.Context) (*bench.Report, error)) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	r, err := run(ctx)
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
}

// positive refuses a flag whose count is not positive.
func positive(flags map[string]int) error {
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		if flags[name] <= 0 {
			return usagef("%s must be a positive count, not %d", name, flags[name])
		}
	}
	return nil
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
