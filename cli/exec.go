package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// newExec is `sbx exec ID -- CMD [ARG...]`.
func newExec(g *globals) *cobra.Command {
	var pf procFlags
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "exec [flags] ID [--] CMD [ARG...]",
		Short: "Run a command in a sandbox, stream its output and exit with its exit code",
		Long: "Run a command in a sandbox: its output streams to stdout and stderr as it comes, stdin passes to it\n" +
			"unless stdin is a terminal, signals to sbx pass to it, and sbx exits with its exit code (128+N when\n" +
			"signal N killed it). CMD runs directly, found on PATH: for shell syntax, run a shell.\n" +
			"Flags go before ID.",
		Example: "  sbx exec sbx-abc123 -- ls -la /workspace\n" +
			"  sbx exec --cwd /workspace/app --env CI=1 sbx-abc123 -- bash -c 'make && make test'\n" +
			"  tar c src | sbx exec sbx-abc123 -- tar x -C /workspace",
		Args: func(cmd *cobra.Command, got []string) error {
			if len(execArgv(got)) == 0 {
				return usagef("%s takes ID and a command, got %d argument(s)\nusage: %s", cmd.CommandPath(), len(got), cmd.UseLine())
			}
			return nil
		},
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			_, tty := terminal(g.opts.Stdin)
			stdin := !tty
			h, err := c.Commands(args[0]).StartArgs(ctx, execArgv(args), &client.CommandOptions{
				Env: pf.env, Cwd: pf.cwd, User: pf.user, Tag: pf.tag, Timeout: timeout, Stdin: stdin,
				OnStdout: func(b []byte) { g.opts.Stdout.Write(b) }, OnStderr: func(b []byte) { g.opts.Stderr.Write(b) },
				DiscardOutput: true,
			})
			if err != nil {
				return err
			}
			if stdin {
				go pumpStdin(ctx, h, g.opts.Stdin)
			}
			defer forwardSignals(ctx, h)()
			res, err := h.Wait(ctx)
			if err != nil {
				return err
			}
			return exitStatus(g, res)
		}),
	}
	cmd.Flags().SetInterspersed(false) // what follows ID is the command's
	pf.add(cmd)
	cmd.Flags().Var(durationValue{&timeout}, "timeout", "kill the command after this, in seconds or as 5m (default: never)")
	return cmd
}

// execArgv is the command of exec's arguments: what follows ID and "--".
func execArgv(args []string) []string {
	if len(args) < 2 {
		return nil
	}
	if args[1] == "--" {
		return args[2:]
	}
	return args[1:]
}

// procFlags are the flags of the process that exec and shell start.
type procFlags struct {
	cwd, user, tag string
	env            map[string]string
}

func (p *procFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&p.cwd, "cwd", "", "working directory (default /workspace)")
	f.Var(pairsValue{&p.env}, "env", "environment variable (repeatable)")
	f.StringVar(&p.user, "user", "", "user name or UID, or root (default: the template's default user, e.g. user in base)")
	f.StringVar(&p.tag, "tag", "", "a name to find the process by, unique among running ones")
}

// pumpStdin copies r to the command's stdin, a request per chunk as it
// comes, then closes it. A failed send ends the copy quietly: the command
// has ended, or the connection broke, which Wait reports.
func pumpStdin(ctx context.Context, h *client.CommandHandle, r io.Reader) {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 && h.SendStdin(ctx, buf[:n]) != nil {
			return
		}
		if err != nil {
			h.CloseStdin(ctx)
			return
		}
	}
}

// forwardSignals passes the signals that would end sbx on to the command,
// until the returned stop is called.
func forwardSignals(ctx context.Context, h *client.CommandHandle) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for sig := range ch {
			h.Signal(ctx, strings.TrimPrefix(unix.SignalName(sig.(syscall.Signal)), "SIG"))
		}
	}()
	return func() { signal.Stop(ch); close(ch) }
}

// exitStatus ends sbx as the process ended: with its exit code, or with
// 128+N when signal N killed it, as shells do; why it ended, when not by
// exiting, goes to stderr.
func exitStatus(g *globals, res *client.CommandResult) error {
	if res.Error != "" {
		fmt.Fprintln(g.opts.Stderr, "sbx:", res.Error)
	}
	code := res.ExitCode
	if res.Signal != "" {
		code = 128 + signalNumber(res.Signal)
	}
	if code == 0 {
		return nil
	}
	return &exitError{code: code}
}

// signalNumber is the number of a signal named with or without SIG, or
// given as a number; SIGKILL's when unknown.
func signalNumber(name string) int {
	if n, err := strconv.Atoi(name); err == nil {
		return n
	}
	if sig := unix.SignalNum("SIG" + strings.TrimPrefix(strings.ToUpper(name), "SIG")); sig != 0 {
		return int(sig)
	}
	return int(syscall.SIGKILL)
}
