package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newTemplateReady is `sbx template ready NAME`: a client verb (the
// operator's), unlike the host's build and list.
func newTemplateReady(g *globals) *cobra.Command {
	var req apiv1.PrepareTemplateRequest
	var memory int64
	var drop, wait bool
	cmd := &cobra.Command{
		Use:   "ready NAME",
		Short: "Give a template a ready snapshot: its creates restore a started sandbox instead of booting (the operator's)",
		Long: "A sandbox of the template boots and runs its start command; once the check passes (--port: something\n" +
			"listens there; --command: it exits 0) it is captured, and creates of the template of that size restore it.\n" +
			"With --wait (the default) the command waits for the outcome; --rm deletes the ready snapshot.",
		Example: "  sbx template ready notebook --port 8888\n  sbx template ready web --command 'curl -sf localhost:3000/health'",
		Args:    args("NAME"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			if drop {
				return c.DropReadyTemplate(ctx, args[0])
			}
			if memory != 0 {
				req.MemoryMB = &memory
			}
			st, err := c.PrepareTemplate(ctx, args[0], req)
			for err == nil && wait && st.State == "preparing" {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(500 * time.Millisecond):
				}
				st, err = c.ReadyTemplate(ctx, args[0])
			}
			if err != nil {
				return err
			}
			if err := g.show(st, func(w io.Writer) error {
				line := st.Template + " " + st.State
				if st.Snapshot != nil {
					line += fmt.Sprintf(", snapshot %s (%s)", st.Snapshot.ID, bytesText(st.Snapshot.SizeBytes))
				}
				if st.Diagnostic != "" {
					line += ": " + st.Diagnostic
				}
				_, err := fmt.Fprintln(w, line)
				return err
			}); err != nil {
				return err
			}
			if st.State == "failed" {
				return &exitError{code: 1}
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.IntVar(&req.Port, "port", 0, "ready when something listens on this port")
	f.StringVar(&req.Command, "command", "", "ready when this command exits 0")
	f.StringSliceVar(&req.WarmCode, "warm-code", nil, "start the default code context of these languages (python, bash, javascript) before the capture: warm in every sandbox that restores it")
	f.Int64Var(&memory, "memory-mb", 0, "the memory of the sandboxes that restore it (default: the server's)")
	f.BoolVar(&wait, "wait", true, "wait until it is ready or failed")
	f.BoolVar(&drop, "rm", false, "delete the template's ready snapshot: its creates boot again")
	return cmd
}
