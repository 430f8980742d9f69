package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"

	"github.com/sbxdev/sbx/apiv1"
)

// The cgroup v1 and v2 files stats reads.
const (
	cpuacctUsage = "/sys/fs/cgroup/cpuacct/cpuacct.usage"        // nanoseconds
	cpuStat      = "/sys/fs/cgroup/cpu.stat"                     // v2: usage_usec
	memUsage     = "/sys/fs/cgroup/memory/memory.usage_in_bytes" // bytes
	memCurrent   = "/sys/fs/cgroup/memory.current"               // v2: bytes
)

// stats is `agent stats`: apiv1.AgentStats as JSON on stdout, the
// sandbox's own measure of itself, from the cgroup files its kernel shows
// it (gVisor's, or the container's under a cgroup namespace) and its
// process table. A provider that has no measure of its own (the kubernetes
// provider, where the metrics API gives no CPU seconds and may not be
// served) runs it through exec.
func stats(_ context.Context, args []string, _ io.Writer) error {
	if len(args) > 0 {
		return usageError{"stats takes no arguments"}
	}
	var s apiv1.AgentStats
	if ns, err := readInt(cpuacctUsage); err == nil {
		s.CPUSeconds = float64(ns) / 1e9
	} else if us, err := statField(cpuStat, "usage_usec"); err == nil {
		s.CPUSeconds = float64(us) / 1e6
	} else {
		return fmt.Errorf("no CPU usage to read: %w", err)
	}
	var err error
	if s.MemoryBytes, err = readInt(memUsage); err != nil {
		if s.MemoryBytes, err = readInt(memCurrent); err != nil {
			return fmt.Errorf("no memory usage to read: %w", err)
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.IndexFunc(e.Name(), func(r rune) bool { return !unicode.IsDigit(r) }) < 0 {
			s.Processes++
		}
	}
	return json.NewEncoder(os.Stdout).Encode(s)
}

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

// statField reads KEY VALUE from a flat-keyed cgroup file.
func statField(path, key string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s has no %s", path, key)
}
