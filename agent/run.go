package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"
)

// shutdownGrace bounds how long Run waits for requests in flight once its
// context ends and the agent has closed.
const shutdownGrace = 5 * time.Second

// Run is `sbx agent`: it makes an agent from cfg and serves its API on addr
// until ctx ends, then closes it. As PID 1 (or a child subreaper) the agent
// also reaps every orphan of the sandbox, from its first command on.
func Run(ctx context.Context, cfg Config, addr string) error {
	a, err := New(cfg)
	if err != nil {
		return err
	}
	// The start command's output goes to the sandbox's log too (the
	// agent's stdout), where its owner reads it with GET …/logs.
	logged := make(chan struct{})
	logCtx, stopLog := context.WithCancel(context.Background())
	go func() {
		defer close(logged)
		a.logStart(logCtx, os.Stdout)
	}()
	defer func() {
		stopLog()
		<-logged
	}()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		a.Close()
		return fmt.Errorf("agent: %w", err)
	}
	// No read or write timeouts: streams last as long as their commands,
	// and a wall-clock deadline would misfire across a checkpoint.
	srv := &http.Server{Handler: a.Handler(), ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	a.log.Info("agent serving", "addr", ln.Addr().String(), "workdir", a.workdir, "reaps_orphans", a.reaper.all)
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	a.Close()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		srv.Close()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
