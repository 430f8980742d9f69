// Command sbx-agent is the in-sandbox agent alone: `sbx-agent agent …` is
// `sbx agent …` (agent.Main) without the server, CLI and ledger the sbx
// binary also links, so that every idle sandbox maps and initialises a
// quarter of the code. scripts/lib.sh's build_sbx builds it first and
// embeds it in sbx (package agentbin), which runs it as the sandboxes'
// agent; no one installs or runs it on its own.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/sbxdev/sbx/agent"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "agent" {
		fmt.Fprintln(os.Stderr, "usage: sbx-agent agent [flags] | sbx-agent agent echo PORT…")
		os.Exit(2)
	}
	os.Exit(agent.Main(context.Background(), os.Args[2:], os.Stderr))
}
