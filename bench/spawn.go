package bench

import (
	"context"
	"fmt"
	"os/exec"
	"time"
)

// SpawnTimes runs argv n times, one at a time with gap between runs, and
// returns how long each took from fork to the end of wait. Run inside a
// sandbox (`sbx bench spawn`), it is gVisor's floor under a command's round
// trip: what starting and reaping a process costs there, with no agent,
// network or API in the way. The gap leaves the sandbox idle between runs,
// as a client's round trips do.
func SpawnTimes(ctx context.Context, argv []string, n int, gap time.Duration) ([]time.Duration, error) {
	times := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s: %w: %s", argv[0], err, out)
		}
		times = append(times, time.Since(start))
		time.Sleep(gap)
	}
	return times, nil
}
