package cli

import (
	"context"
	"io"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newRuntimeSet is `sbx runtime set [RUNTIME]`: the flags given replace
// those fields of the runtime's configuration, which its next start uses.
func newRuntimeSet(g *globals, s *scope) *cobra.Command {
	var req apiv1.UpdateRuntimeRequest
	var template string
	var cpu float64
	var memory int64
	var timeout time.Duration
	var ports []int
	var env, labels map[string]string
	var egress egressFlags
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "set [RUNTIME]",
		Short: "Change what the runtime's next sandbox is made with: template, resources, timeout, ports, env, labels, egress",
		Args:  cobra.MaximumNArgs(1),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			f := cmd.Flags()
			set := func(name string, apply func()) {
				if f.Changed(name) {
					apply()
				}
			}
			set("template", func() { req.TemplateID = &template })
			set("cpu", func() { req.CPU = &cpu })
			set("memory", func() { req.MemoryMB = &memory })
			set("timeout", func() { secs := int64(timeout.Round(time.Second) / time.Second); req.Timeout = &secs })
			set("port", func() { req.Ports = &ports })
			set("env", func() { req.Env = &env })
			set("label", func() { req.Labels = &labels })
			req.Egress = egress.policy()
			if req == (apiv1.UpdateRuntimeRequest{}) {
				return usagef("sbx runtime set needs at least one of --template, --cpu, --memory, --timeout, --port, --env, --label, --egress, --egress-allow, --egress-deny")
			}
			ref, err := s.runtimeOf(ctx, c, firstArg(args))
			if err != nil {
				return err
			}
			rt, err := c.UpdateRuntime(ctx, ref.org, ref.workspace, ref.id, req)
			if err != nil {
				return err
			}
			return g.show(rt, func(w io.Writer) error { return runtimeDetail(w, rt) })
		}),
	}
	f := cmd.Flags()
	f.StringVar(&template, "template", "", "template of its sandboxes")
	f.Float64Var(&cpu, "cpu", 0, "vCPU")
	f.Int64Var(&memory, "memory", 0, "memory in MB")
	f.Var(durationValue{&timeout}, "timeout", "the sandbox's timeout: seconds (300) or a duration (5m, 1h)")
	f.IntSliceVar(&ports, "port", nil, "a port reached at preview URLs (repeat; all given replace the list)")
	f.Var(pairsValue{&env}, "env", "KEY=VALUE environment variable (repeat; all given replace the set)")
	f.Var(pairsValue{&labels}, "label", "KEY=VALUE label (repeat; all given replace the set)")
	egress.add(f, "its sandboxes", "the configuration's stays")
	return cmd
}
