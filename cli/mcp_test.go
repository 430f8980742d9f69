package cli_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sbxdev/sbx/cli"
	"github.com/sbxdev/sbx/internal/agenttest"
)

// sbx mcp serves the tools on its stdin and stdout as $SBX_API_KEY's
// caller, and ends cleanly when the client closes its stdin.
func TestMCPOverStdio(t *testing.T) {
	s := agenttest.Serve(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang guard
	defer cancel()
	t.Setenv("SBX_URL", s.URL)
	t.Setenv("SBX_API_KEY", s.Key)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		code := cli.Run([]string{"mcp"}, cli.Options{Stdin: inR, Stdout: outW, Stderr: &stderr})
		outW.Close()
		exited <- code
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ServerInfo.Name; got != "sbx" {
		t.Errorf("server name %q", got)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_sandbox", Arguments: map[string]any{"template": "base"}})
	if err != nil || res.IsError {
		t.Fatalf("create_sandbox: %v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(text, "created sandbox ") || !strings.Contains(text, "running") {
		t.Fatalf("create_sandbox said %q", text)
	}
	cs.Close()
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("sbx mcp exited %d: %s", code, stderr.String())
		}
	case <-ctx.Done():
		t.Fatal("sbx mcp did not end when its stdin closed")
	}
}

// Without a key, sbx mcp says so and does not start.
func TestMCPWithoutKey(t *testing.T) {
	t.Setenv("SBX_API_KEY", "")
	t.Setenv("SBX_DATA_DIR", t.TempDir())
	var stderr bytes.Buffer
	code := cli.Run([]string{"mcp"}, cli.Options{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr})
	if code == 0 || !strings.Contains(stderr.String(), "no API key") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}
