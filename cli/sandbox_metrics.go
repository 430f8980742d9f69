package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxMetrics is `sbx sandbox metrics ID`.
func newSandboxMetrics(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "metrics ID",
		Short: "Measure a running sandbox now: CPU time, memory, processes, network and disk",
		Args:  args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			m, err := c.Metrics(ctx, args[0])
			if err != nil {
				return err
			}
			return g.show(m, func(w io.Writer) error {
				cpu := time.Duration(m.CPUSeconds * float64(time.Second)).Round(time.Millisecond)
				return fields(w, []field{
					{"At", stamp(m.At)}, {"CPU time", cpu.String()}, {"Memory", bytesText(m.MemoryBytes)},
					{"Processes", strconv.FormatInt(m.Processes, 10)},
					{"Network", fmt.Sprintf("%s received, %s sent", bytesText(m.NetRxBytes), bytesText(m.NetTxBytes))},
					{"Disk used", bytesText(m.DiskUsedBytes)},
				})
			})
		}),
	}
}

// bytesText renders a byte count in the largest binary unit it fills.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, i := float64(n), 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGT"[i-1])
}
