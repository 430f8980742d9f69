package agent

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/echoserver"
)

// Main is the agent's command line, the words after `agent` in `sbx agent …`
// (and in the agent-only build, cmd/sbx-agent, which the sandboxes run):
//
//	agent (--token-fd N | --token-fifo PATH) [--port P] [--user U] [--workdir D] [--start CMD] [--log-level L]
//	agent echo PORT…
//	agent give-token PATH
//	agent pipe PORT
//	agent stats
//
// The first serves the agent API until SIGTERM or SIGINT; the second an HTTP
// and WebSocket echo server on each port (package echoserver), which the
// preview tests and `sbx bench preview` start in a sandbox, where the agent's
// binary always is; the last three are run in a sandbox by a provider that
// reaches it only through exec: give-token hands the agent its token, pipe
// tunnels a connection to a port (fifo.go), stats measures the sandbox
// (stats.go). Main reports what went wrong on stderr and answers the
// exit code: 2 for a bad command line, 1 for a failure.
func Main(ctx context.Context, args []string, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	run := serve
	if len(args) > 0 {
		if sub, ok := map[string]func(context.Context, []string, io.Writer) error{"echo": echo, "give-token": giveToken, "pipe": pipe, "stats": stats}[args[0]]; ok {
			run, args = sub, args[1:]
		}
	}
	err := run(ctx, args, stderr)
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintln(stderr, "sbx: agent:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "sbx: agent:", err)
		return 1
	}
}

// usageError is a command line Main cannot run.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// serve is `agent [flags]`.
func serve(ctx context.Context, args []string, stderr io.Writer) error {
	var cfg Config
	var port, tokenFD int
	var logLevel, tokenFIFO string
	f := flag.NewFlagSet("agent", flag.ContinueOnError)
	f.SetOutput(stderr)
	f.IntVar(&port, "port", apiv1.AgentPort, "port to serve the agent API on")
	f.IntVar(&tokenFD, "token-fd", -1, "an open descriptor to read the access token from, to its end (then closed): the token is never in the environment, argv or a file; 0 is stdin (a container's, which a provider writes the token to)")
	f.StringVar(&tokenFIFO, "token-fifo", "", "read the access token from a FIFO made at this path, which `agent give-token PATH` writes to (in place of --token-fd, where no descriptor can be passed)")
	f.StringVar(&cfg.User, "user", "", "the user commands, PTYs and new files belong to unless a request names another (default: the agent's own)")
	f.StringVar(&cfg.Workdir, "workdir", DefaultWorkdir, "default working directory, and base of relative paths")
	f.StringVar(&cfg.Start, "start", "", "a command line to start in the background, tagged "+StartTag)
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if f.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", f.Arg(0))}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return usageError{"--log-level: " + err.Error()}
	}
	var token string
	var err error
	switch {
	case tokenFIFO != "" && tokenFD >= 0:
		return usageError{"--token-fd and --token-fifo are two ways to the token: give one"}
	case tokenFIFO != "":
		token, err = readTokenFIFO(tokenFIFO)
	case tokenFD < 0 || tokenFD == 1 || tokenFD == 2:
		return usageError{"--token-fd must name the descriptor that holds the access token: stdin (0), or 3 or more (or give --token-fifo)"}
	default:
		token, err = ReadToken(tokenFD)
	}
	if err != nil {
		return err
	}
	if tokenFD == 0 { // stdin, read to its end and closed: /dev/null takes its place
		if err := reopenStdin(); err != nil {
			return err
		}
	}
	cfg.Token = token
	cfg.Log = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	return Run(ctx, cfg, fmt.Sprintf(":%d", port))
}

// echo is `agent echo PORT…`.
func echo(ctx context.Context, args []string, _ io.Writer) error {
	if len(args) == 0 {
		return usageError{"echo needs at least one port"}
	}
	var ports []int
	for _, a := range args {
		p, err := strconv.Atoi(a)
		if err != nil || p < 1 || p > 65535 {
			return usageError{fmt.Sprintf("echo: %q is not a port", a)}
		}
		ports = append(ports, p)
	}
	return echoserver.Serve(ctx, ports)
}
