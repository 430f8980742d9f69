package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/server"
)

// SDKResult is the create → run true → delete loop through the Go client,
// the TypeScript SDK and the Python SDK against the same serve, each
// operation timed on its own.
type SDKResult struct {
	Go         SDKTimes `json:"go"`
	TypeScript SDKTimes `json:"typescript"`
	Python     SDKTimes `json:"python"`
}

// SDKTimes are one client's times of each operation of the loop.
type SDKTimes struct {
	Create Stat `json:"create"`
	Run    Stat `json:"run"`
	Delete Stat `json:"delete"`
}

// sdkRounds split the loops of each client into rounds taken in turn, so
// that a drift in the host's load falls on all of them.
const sdkRounds = 3

// SDK runs the SDK benchmark on a real serve in this process: N loops per
// client, in sdkRounds rounds. Every client's create waits until the
// sandbox is ready, so that the run of true that follows is a round trip
// alone. The SDKs' loops are their bench scripts
// (sdk/typescript/bench.mjs and sdk/python/bench.py under cfg.SDKDir),
// run by cfg.Node and cfg.Python.
func SDK(ctx context.Context, cfg Config) (*Report, error) {
	return inLab(ctx, cfg, "sdk", func(e *execLab, r *Report) error {
		key, err := os.ReadFile(filepath.Join(e.dir, server.KeyFile))
		if err != nil {
			return err
		}
		env := append(os.Environ(), "SBX_URL=http://"+e.addr, "SBX_API_KEY="+strings.TrimSpace(string(key)),
			"SBX_BENCH_TEMPLATE="+e.cfg.Template, "SBX_BENCH_N="+strconv.Itoa(max(1, e.cfg.N/sdkRounds)))
		clients := []struct {
			name string
			loop func() (map[string][]float64, error)
		}{
			{"go", func() (map[string][]float64, error) { return e.goLoop(ctx, max(1, e.cfg.N/sdkRounds)) }},
			{"typescript", func() (map[string][]float64, error) {
				return runLoop(ctx, env, e.cfg.Node, filepath.Join(e.cfg.SDKDir, "typescript", "bench.mjs"))
			}},
			{"python", func() (map[string][]float64, error) {
				return runLoop(ctx, env, e.cfg.Python, filepath.Join(e.cfg.SDKDir, "python", "bench.py"))
			}},
		}
		times := map[string]map[string][]float64{}
		for round := range sdkRounds {
			for _, c := range clients {
				got, err := c.loop()
				if err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				if times[c.name] == nil {
					times[c.name] = map[string][]float64{}
				}
				for op, ms := range got {
					times[c.name][op] = append(times[c.name][op], ms...)
				}
			}
			e.cfg.progress("round %d of %d done", round+1, sdkRounds)
		}
		stats := func(name string) SDKTimes {
			t := times[name]
			return SDKTimes{Create: msStat(t["create"]), Run: msStat(t["run"]), Delete: msStat(t["delete"])}
		}
		r.SDK = &SDKResult{Go: stats("go"), TypeScript: stats("typescript"), Python: stats("python")}
		return nil
	})
}

// goLoop is the loop through the Go client, after 2 warm-ups, as the SDKs'
// scripts do theirs.
func (e *execLab) goLoop(ctx context.Context, n int) (map[string][]float64, error) {
	out := map[string][]float64{}
	for i := range n + 2 {
		var sb *client.Sandbox
		steps := []struct {
			op string
			fn func() error
		}{
			{"create", func() (err error) {
				sb, err = e.c.Create(ctx, e.cfg.Template, &client.CreateOptions{WaitReady: true})
				return err
			}},
			{"run", func() error {
				res, err := sb.Commands.Run(ctx, "true", nil)
				if err == nil && res.ExitCode != 0 {
					err = fmt.Errorf("true exited %d", res.ExitCode)
				}
				return err
			}},
			{"delete", func() error { return sb.Delete(ctx) }},
		}
		for _, s := range steps {
			d, err := timeIt(s.fn)
			if err != nil {
				return nil, err
			}
			if i >= 2 {
				out[s.op] = append(out[s.op], ms(d))
			}
		}
	}
	return out, nil
}

// runLoop runs an SDK's bench script, which prints its times as one JSON
// line: {"create": [ms, …], "run": […], "delete": […]}.
func runLoop(ctx context.Context, env []string, interpreter, script string) (map[string][]float64, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, interpreter, script)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.WaitDelay = env, &stdout, &stderr, 10*time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", interpreter, script, err, lastLines(stderr.String(), 5))
	}
	var out map[string][]float64
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("%s printed %q, not its times: %w", script, lastLines(stdout.String(), 3), err)
	}
	return out, nil
}

// msStat is NewStat of times in milliseconds.
func msStat(times []float64) Stat {
	d := make([]time.Duration, len(times))
	for i, t := range times {
		d[i] = time.Duration(t * float64(time.Millisecond))
	}
	return NewStat(d)
}

// rows are the SDK benchmark's lines: each SDK's operation against the Go
// client's, goal ≤ 1.2×.
func (s *SDKResult) rows() []Row {
	var rows []Row
	for _, sdk := range []struct {
		name string
		t    SDKTimes
	}{{"TypeScript", s.TypeScript}, {"Python", s.Python}} {
		for _, op := range []struct {
			name     string
			got, ref Stat
		}{{"create", sdk.t.Create, s.Go.Create}, {"run true", sdk.t.Run, s.Go.Run}, {"delete", sdk.t.Delete, s.Go.Delete}} {
			ratio := Ratio(op.got.P50, op.ref.P50)
			t, met := maxRatio(ratio, 1.2)
			rows = append(rows, Row{sdk.name + " SDK " + op.name + " p50", msText(op.got.P50), "Go client " + msText(op.ref.P50), ratio, t + " Go client", met})
		}
	}
	return rows
}
