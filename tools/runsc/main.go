// Command runsc is gVisor's runsc, as sbx runs it: gVisor's own main
// (runsc/cli/maincli) from the version go.mod pins, plus one thing.
//
// Every sandbox is two long-lived runsc processes (the sentry and its
// gofer), each a Go program that allocates most of what it ever will while
// it sets the sandbox up and then sits idle. The Go runtime hands freed
// memory back to the host only gradually, so an idle sandbox keeps its
// setup's garbage for minutes. Here each runsc process returns it a few
// times in its first half minute (debug.FreeOSMemory), which takes about
// 2 MB off every idle sandbox (docs/BENCHMARKS.md, idle density). runsc
// re-executes this same binary for the sentry and the gofer, so they run
// this main too.
package main

import (
	"runtime/debug"
	"time"

	"gvisor.dev/gvisor/runsc/cli/maincli"
	"gvisor.dev/gvisor/runsc/version"
)

// version.Version is set by the linker (-X), and must be linked in.
var _ = version.Version()

// freeAfter are the times after its start at which a runsc process returns
// its free memory to the host: after a sandbox's boot, its agent's first
// requests, and a slow restore.
var freeAfter = []time.Duration{time.Second, 3 * time.Second, 10 * time.Second, 30 * time.Second}

func main() {
	go func() {
		start := time.Now()
		for _, at := range freeAfter {
			time.Sleep(time.Until(start.Add(at)))
			debug.FreeOSMemory()
		}
	}()
	maincli.Main()
}
