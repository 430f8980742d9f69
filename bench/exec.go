package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/local"
	"github.com/sbxdev/sbx/local/runsc"
	"github.com/sbxdev/sbx/server"
)

// ExecResult is the agent's data plane through serve's API against `runsc
// exec` of the same work on the same sandbox: the round trip of `true`, a
// command's output, and a file's upload and download. Each Stat is of the
// time one call took, in milliseconds.
type ExecResult struct {
	RoundTrip Pair     `json:"round_trip"`
	Spawn     Stat     `json:"spawn_in_sandbox"` // `true` run by a process inside the sandbox: gVisor's floor under RoundTrip
	Output    Transfer `json:"output"`
	Upload    Transfer `json:"upload"`
	Download  Transfer `json:"download"`
}

// Pair is one measure through sbx and through its baseline.
type Pair struct {
	Local Stat `json:"local"`
	Runsc Stat `json:"runsc"`
}

// Transfer is a Pair of moving MB megabytes (MiB).
type Transfer struct {
	MB int `json:"mb"`
	Pair
}

// Exec runs the exec benchmark: a real `sbx serve` (in this process, on a
// temporary data directory, with its own nftables table, address pool and
// cgroup parent) runs one sandbox whose agent the Go client reaches through
// the API over loopback, while the baseline runs the same commands in the
// same sandbox with `runsc exec`, in turns. It returns what it measured,
// with the table filled in, also when it stops on an error.
func Exec(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Agent == "" {
		return &Report{}, errors.New("the exec benchmark needs the sbx binary, to run as the sandbox's agent and run `sbx bench spawn` in it")
	}
	return inLab(ctx, cfg, "exec", func(e *execLab, r *Report) error {
		r.Exec = &ExecResult{}
		for _, phase := range []func(context.Context, *ExecResult) error{e.roundTrip, e.output, e.upload, e.download} {
			if err := phase(ctx, r.Exec); err != nil {
				return err
			}
		}
		return nil
	})
}

// inLab runs bench (named name) against a fresh execLab: a real serve in
// this process and one sandbox. It answers the report with its table
// filled in, also when bench stops on an error, and removes the lab.
func inLab(ctx context.Context, cfg Config, name string, bench func(e *execLab, r *Report) error) (r *Report, err error) {
	cfg.defaults()
	r, _, err = newReport(ctx, cfg)
	if err != nil {
		return r, err
	}
	dir, err := os.MkdirTemp("", "sbx-bench-"+name+"-")
	if err != nil {
		return r, err
	}
	r.Load = "load average " + loadAverage() + " at start"
	e := &execLab{cfg: cfg, dir: dir, rs: runsc.Runsc{Path: cfg.Runsc, Root: filepath.Join(dir, "runsc")}}
	defer func() {
		r.Load += ", " + loadAverage() + " at end"
		err = errors.Join(err, e.close())
		r.Rows, r.Notes = r.rows(), r.notes()
	}()
	if err := e.open(ctx); err != nil {
		return r, err
	}
	if err := bench(e, r); err != nil {
		if ctx.Err() != nil {
			return r, fmt.Errorf("stopped: %w", context.Cause(ctx))
		}
		return r, err
	}
	return r, nil
}

// execLab is one run of the exec benchmark: the server and its sandbox.
type execLab struct {
	cfg     Config
	dir     string // the server's data directory
	rs      runsc.Runsc
	stop    context.CancelFunc
	stopped chan error
	addr    string // where serve listens
	c       *client.Client
	sb      *client.Sandbox
}

// open starts the server and creates the sandbox, waiting for its agent.
func (e *execLab) open(ctx context.Context) error {
	serveCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	e.stop, e.stopped = stop, make(chan error, 1)
	started := make(chan string, 1)
	go func() {
		e.stopped <- server.Run(serveCtx, server.Config{DataDir: e.dir, Listen: "127.0.0.1:0", HibernateAfter: 0,
			Local: server.LocalConfig{Runsc: e.cfg.Runsc, TemplatesDir: e.cfg.Templates.Dir, Pool: e.cfg.Pool, Name: e.cfg.Name, Agent: e.cfg.Agent},
			Log:   slog.New(slog.NewTextHandler(e.cfg.Progress, &slog.HandlerOptions{Level: slog.LevelWarn})), Out: io.Discard,
			Started: func(addr string) { started <- addr }})
	}()
	select {
	case e.addr = <-started:
	case err := <-e.stopped:
		e.stopped <- err
		return fmt.Errorf("sbx serve: %w", err)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	key, err := os.ReadFile(filepath.Join(e.dir, server.KeyFile))
	if err != nil {
		return err
	}
	e.c = client.New(client.Options{URL: "http://" + e.addr, APIKey: strings.TrimSpace(string(key))})
	e.cfg.progress("serve at %s; creating a %s sandbox", e.addr, e.cfg.Template)
	e.sb, err = e.c.Create(ctx, e.cfg.Template, &client.CreateOptions{WaitReady: true, Timeout: time.Hour, MemoryMB: memoryMB + 2*int64(e.cfg.FileMB), DiskMB: 2048})
	return err
}

// close kills the sandbox, stops the server and removes what is left.
func (e *execLab) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	if e.sb != nil {
		errs = append(errs, e.sb.Delete(ctx))
	}
	if e.stop != nil {
		e.stop()
		errs = append(errs, <-e.stopped)
	}
	errs = append(errs, deleteTable(ctx, e.cfg.Name), killProcessesUnder(e.dir), unmountUnder(e.dir),
		removeCgroupParent(e.cfg.Name), os.RemoveAll(e.dir))
	return errors.Join(errs...)
}

// runsc runs `runsc exec` of args in the sandbox, as serve's runsc sees it,
// with stdin and stdout (nil: nothing), and fails with what runsc said.
func (e *execLab) runsc(ctx context.Context, stdin io.Reader, stdout io.Writer, args ...string) error {
	var stderr bytes.Buffer
	cmd := e.rs.Command(ctx, nil, append([]string{"exec", e.sb.SandboxID()}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("runsc exec %s: %w: %s", args[0], err, lastLines(stderr.String(), 3))
	}
	return nil
}

// roundTrip runs `true` Calls times each way, in turns, after 5 warm-ups.
func (e *execLab) roundTrip(ctx context.Context, res *ExecResult) error {
	p, err := inTurns(e.cfg.Calls, 5, func() error { return e.run(ctx, nil, "true") },
		func() error { return e.runsc(ctx, nil, nil, "true") })
	if err != nil {
		return err
	}
	res.RoundTrip = p
	e.cfg.progress("round trip of true: API p50 %.2f ms, runsc exec p50 %.2f ms", p.Local.P50, p.Runsc.P50)
	gap := time.Duration(p.Local.P50 * float64(time.Millisecond))
	if res.Spawn, err = e.spawnFloor(ctx, gap); err != nil {
		return err
	}
	e.cfg.progress("true spawned inside the sandbox, one per %v: p50 %.2f ms", gap.Round(time.Microsecond), res.Spawn.P50)
	return nil
}

// spawnFloor times Calls runs of `true` by a process inside the sandbox (this
// binary, as `sbx bench spawn`), idle for gap between runs as the sandbox is
// between the API's round trips.
func (e *execLab) spawnFloor(ctx context.Context, gap time.Duration) (Stat, error) {
	var out bytes.Buffer
	if err := e.runsc(ctx, nil, &out, local.AgentMount, "bench", "spawn", "--n", strconv.Itoa(e.cfg.Calls), "--gap", gap.String(), "--", "true"); err != nil {
		return Stat{}, err
	}
	var times []time.Duration
	for _, line := range strings.Fields(out.String()) {
		ns, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return Stat{}, fmt.Errorf("sbx bench spawn printed %q, not nanoseconds", line)
		}
		times = append(times, time.Duration(ns))
	}
	return NewStat(times), nil
}

// output reads what `head -c N /dev/zero` writes, Rounds times each way.
func (e *execLab) output(ctx context.Context, res *ExecResult) error {
	n := int64(e.cfg.OutputMB) << 20
	argv := []string{"head", "-c", strconv.FormatInt(n, 10), "/dev/zero"}
	return e.transfer(&res.Output, e.cfg.OutputMB, "output", func() error {
		var got int64
		if err := e.run(ctx, &client.CommandOptions{DiscardOutput: true, OnStdout: func(b []byte) { got += int64(len(b)) }}, argv...); err != nil {
			return err
		}
		return sameSize("the API's stdout", got, n)
	}, func() error {
		c := counter{}
		if err := e.runsc(ctx, nil, &c, argv...); err != nil {
			return err
		}
		return sameSize("runsc exec's stdout", c.n, n)
	})
}

// upload writes a file of FileMB into /workspace, Rounds times each way.
func (e *execLab) upload(ctx context.Context, res *ExecResult) error {
	n := int64(e.cfg.FileMB) << 20
	return e.transfer(&res.Upload, e.cfg.FileMB, "upload", func() error {
		info, err := e.sb.Files.Write(ctx, "/workspace/api", newPattern(n))
		if err != nil {
			return err
		}
		return sameSize("the uploaded file", info.Size, n)
	}, func() error {
		return e.runsc(ctx, newPattern(n), nil, "/bin/sh", "-c", "cat > /workspace/runsc")
	})
}

// download reads the uploaded file back, Rounds times each way.
func (e *execLab) download(ctx context.Context, res *ExecResult) error {
	n := int64(e.cfg.FileMB) << 20
	return e.transfer(&res.Download, e.cfg.FileMB, "download", func() error {
		body, err := e.sb.Files.Read(ctx, "/workspace/api")
		if err != nil {
			return err
		}
		defer body.Close()
		got, err := io.Copy(io.Discard, body)
		if err != nil {
			return err
		}
		return sameSize("the downloaded file", got, n)
	}, func() error {
		c := counter{}
		if err := e.runsc(ctx, nil, &c, "cat", "/workspace/runsc"); err != nil {
			return err
		}
		return sameSize("runsc exec's cat", c.n, n)
	})
}

// transfer times local and raw, Rounds times each in turns, after one
// warm-up of each.
func (e *execLab) transfer(t *Transfer, mb int, what string, local, raw func() error) error {
	p, err := inTurns(e.cfg.Rounds, 1, local, raw)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	*t = Transfer{MB: mb, Pair: p}
	e.cfg.progress("%s %d MB: API p50 %.0f ms (%.0f MB/s), runsc exec p50 %.0f ms (%.0f MB/s)", what, mb,
		t.Local.P50, t.rate(t.Local), t.Runsc.P50, t.rate(t.Runsc))
	return nil
}

// inTurns times local and raw n times each after warm untimed rounds, the
// two taking turns at going first.
func inTurns(n, warm int, local, raw func() error) (Pair, error) {
	s, err := inTurnsOf(n, warm, local, raw)
	if err != nil {
		return Pair{}, err
	}
	return Pair{s[0], s[1]}, nil
}

// inTurnsOf times each of fs n times after warm untimed rounds, taking
// turns at going first.
func inTurnsOf(n, warm int, fs ...func() error) ([]Stat, error) {
	times := make([][]time.Duration, len(fs))
	for i := range warm + n {
		err := inTurn(i, len(fs), func(k int) error {
			d, err := timeIt(fs[k])
			if i >= warm {
				times[k] = append(times[k], d)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]Stat, len(fs))
	for k := range fs {
		out[k] = NewStat(times[k])
	}
	return out, nil
}

// run runs argv through the API and fails unless it exits 0.
func (e *execLab) run(ctx context.Context, opts *client.CommandOptions, argv ...string) error {
	res, err := e.sb.Commands.RunArgs(ctx, argv, opts)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s exited %d through the API: %s", argv[0], res.ExitCode, res.Stderr)
	}
	return nil
}

// rate is MB per second at the time s took at p50.
func (t Transfer) rate(s Stat) float64 {
	if s.P50 <= 0 {
		return 0
	}
	return float64(t.MB) / (s.P50 / 1000)
}

func timeIt(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

func sameSize(what string, got, want int64) error {
	if got != want {
		return fmt.Errorf("%s has %d bytes, not %d", what, got, want)
	}
	return nil
}

// counter counts what is written to it.
type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// pattern is n bytes of a random 1 MiB block, repeated: incompressible, and
// cheap to make.
type pattern struct {
	block []byte
	left  int64
	off   int
}

func newPattern(n int64) *pattern {
	block := make([]byte, 1<<20)
	for i := range block {
		block[i] = byte(rand.Uint32())
	}
	return &pattern{block: block, left: n}
}

func (p *pattern) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(int64(len(b)), p.left)], p.block[p.off:])
	p.off = (p.off + n) % len(p.block)
	p.left -= int64(n)
	return n, nil
}
