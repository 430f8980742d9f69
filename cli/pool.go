package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newPool is the `sbx pool` command group: templates' warm pools, the
// operator's.
func newPool(g *globals) *cobra.Command {
	return group(&cobra.Command{Use: "pool", Aliases: []string{"pools"}, Short: "Keep sandboxes of a template warm for creates to check out (the operator's)"},
		newPoolSet(g), newPoolList(g), newPoolRm(g))
}

// newPoolSet is `sbx pool set TEMPLATE --min N --max M`.
func newPoolSet(g *globals) *cobra.Command {
	var req apiv1.SetWarmPoolRequest
	var cpu float64
	var memory, disk int64
	cmd := &cobra.Command{
		Use:     "set TEMPLATE",
		Short:   "Keep --min sandboxes of TEMPLATE ready (at most --max)",
		Example: "  sbx pool set base --min 4 --max 8\n  sbx sandbox create base --warm-pool require",
		Args:    args("TEMPLATE"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			if cpu != 0 {
				req.CPU = &cpu
			}
			if memory != 0 {
				req.MemoryMB = &memory
			}
			if disk != 0 {
				req.DiskMB = &disk
			}
			p, err := c.SetWarmPool(ctx, args[0], req)
			if err != nil {
				return err
			}
			return g.show(p, func(w io.Writer) error { return poolTable(w, []apiv1.WarmPool{*p}) })
		}),
	}
	f := cmd.Flags()
	f.IntVar(&req.MinReady, "min", 1, "sandboxes kept ready")
	f.IntVar(&req.MaxReady, "max", 1, "the most the pool holds")
	f.Float64Var(&cpu, "cpu", 0, "the members' vCPUs (default: the server's); creates asking another size go cold")
	f.Int64Var(&memory, "memory-mb", 0, "the members' memory in MB (default: the server's)")
	f.Int64Var(&disk, "disk-mb", 0, "the members' disk cap in MB (default: the server's)")
	return cmd
}

// newPoolList is `sbx pool list`.
func newPoolList(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List warm pools and what they hold",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			l, err := c.WarmPools(ctx)
			if err != nil {
				return err
			}
			return g.show(l, func(w io.Writer) error { return poolTable(w, l.Items) })
		}),
	}
}

// newPoolRm is `sbx pool rm TEMPLATE`.
func newPoolRm(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm TEMPLATE",
		Short: "Delete a template's warm pool and kill its waiting sandboxes",
		Args:  args("TEMPLATE"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return c.DeleteWarmPool(ctx, args[0])
		}),
	}
}

func poolTable(w io.Writer, pools []apiv1.WarmPool) error {
	rows := make([][]string, len(pools))
	for i, p := range pools {
		rows[i] = []string{p.Template, fmt.Sprint(p.Ready), fmt.Sprint(p.Starting), fmt.Sprint(p.MinReady), fmt.Sprint(p.MaxReady),
			fmt.Sprintf("%g/%d/%d", p.CPU, p.MemoryMB, p.DiskMB)}
	}
	return table(w, []string{"TEMPLATE", "READY", "STARTING", "MIN", "MAX", "CPU/MEMORY MB/DISK MB"}, rows)
}
