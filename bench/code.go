package bench

import (
	"context"
	"fmt"

	"github.com/sbxdev/sbx/client"
)

// CodeResult is a round trip of `1+1` through the code API (a warm
// kernel of the sandbox's default python context) against `python3 -c
// 'print(1+1)'` through the commands API in the same sandbox: a new
// interpreter each time, what an agent without code contexts pays.
type CodeResult struct {
	RoundTrip Pair `json:"round_trip"` // Local: POST …/code/execute; Runsc: POST …/commands python3 -c
}

// Code runs the code benchmark on a real serve in this process, in a
// sandbox of cfg.Template (one with python3-ipykernel: code-interpreter).
func Code(ctx context.Context, cfg Config) (*Report, error) {
	return inLab(ctx, cfg, "code", func(e *execLab, r *Report) error {
		r.Code = &CodeResult{}
		code := func() error {
			ex, err := e.sb.Code.Run(ctx, "1+1", nil)
			if err == nil && ex.Text() != "2" {
				err = fmt.Errorf("1+1 gave %+v", ex)
			}
			return err
		}
		if err := code(); err != nil { // the kernel starts
			return err
		}
		exec := func() error {
			res, err := e.sb.Commands.Run(ctx, "python3 -c 'print(1+1)'", &client.CommandOptions{})
			if err == nil && res.Stdout != "2\n" {
				err = fmt.Errorf("python3 -c gave %+v", res)
			}
			return err
		}
		p, err := inTurns(e.cfg.Calls, 5, code, exec)
		if err != nil {
			return err
		}
		r.Code.RoundTrip = p
		e.cfg.progress("1+1: code API p50 %.2f ms, python3 -c p50 %.2f ms", p.Local.P50, p.Runsc.P50)
		return nil
	})
}

// rows is the code benchmark's line of the table, against its goal: ≤ 0.2×
// a new interpreter.
func (c *CodeResult) rows() []Row {
	p := c.RoundTrip
	t, met := maxRatio(Ratio(p.Local.P50, p.Runsc.P50), 0.2)
	return []Row{
		{"code 1+1 round trip p50", msText(p.Local.P50), "python3 -c via commands " + msText(p.Runsc.P50), Ratio(p.Local.P50, p.Runsc.P50), t + " python3 -c", met},
		{"code 1+1 round trip p95", msText(p.Local.P95), "python3 -c via commands " + msText(p.Runsc.P95), Ratio(p.Local.P95, p.Runsc.P95), "", nil},
	}
}
