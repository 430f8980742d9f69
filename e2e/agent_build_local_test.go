package e2e

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/client"
)

// A real serve's sandboxes run the agent-only build that the sbx binary
// carries (cmd/sbx-agent, internal/agentbin), not sbx itself: at
// /.sbx/sbx is a binary of less than half sbx's size that knows only
// `agent`, and it serves the sandbox (commands, its echo server).
func TestSandboxesRunTheAgentOnlyBuild(t *testing.T) {
	s := localServer(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	sb, err := c.Create(ctx, "base", &client.CreateOptions{WaitReady: true, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Delete(context.WithoutCancel(ctx))
	res, err := sb.Commands.Run(ctx, "stat -c %s /.sbx/sbx; /.sbx/sbx version", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 2 || !strings.Contains(res.Stderr, "usage: sbx-agent agent") {
		t.Errorf("/.sbx/sbx version: exit %d, %q %q; want the agent-only build's usage", res.ExitCode, res.Stdout, res.Stderr)
	}
	size, err := strconv.ParseInt(strings.TrimSpace(res.Stdout), 10, 64)
	full, statErr := os.Stat(sbxBin)
	if err != nil || statErr != nil || size*2 > full.Size() {
		t.Errorf("/.sbx/sbx is %q bytes, sbx %v (%v): want less than half", res.Stdout, full, statErr)
	}
}
