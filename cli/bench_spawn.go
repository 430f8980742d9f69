package cli

import (
	"fmt"
	"time"

	"github.com/sbxdev/sbx/bench"
	"github.com/spf13/cobra"
)

// newBenchSpawn is `sbx bench spawn`, which `sbx bench exec` runs inside its
// sandbox: it prints how long each of n runs of a command took, in
// nanoseconds, a line each. Hidden: it is the exec bench's instrument.
func newBenchSpawn() *cobra.Command {
	var n int
	var gap time.Duration
	cmd := &cobra.Command{
		Use:    "spawn [flags] -- CMD [ARG...]",
		Short:  "Time runs of a command, one at a time (sbx bench exec runs it inside its sandbox)",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := positive(map[string]int{"--n": n}); err != nil {
				return err
			}
			times, err := bench.SpawnTimes(cmd.Context(), argv, n, gap)
			for _, t := range times {
				fmt.Fprintln(cmd.OutOrStdout(), t.Nanoseconds())
			}
			return err
		},
	}
	cmd.Flags().IntVar(&n, "n", 200, "runs")
	cmd.Flags().DurationVar(&gap, "gap", 0, "idle time between runs")
	return cmd
}
