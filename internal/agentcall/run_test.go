package agentcall_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/agent"
	"github.com/sbxdev/sbx/internal/agentcall"
	"github.com/sbxdev/sbx/internal/testenv"
)

const token = "0123456789abcdef0123456789abcdef"

// WriteFile and Run against a real agent: a file written with its mode, a
// script run to its end with its env, exit code and output, a failing one's
// code and a timeout's kill.
func TestWriteFileAndRun(t *testing.T) {
	dir := t.TempDir()
	a, err := agent.New(agent.Config{Token: token, Workdir: dir, Env: testenv.AgentEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()

	tool := filepath.Join(dir, "caps", "tool.sh")
	if err := agentcall.WriteFile(ctx, addr, token, tool, []byte("#!/bin/sh\necho tool says $1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(tool); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("written: %v %v", fi, err)
	}
	code, out, err := agentcall.Run(ctx, addr, token, tool+` "$WORD"`, map[string]string{"WORD": "hi"}, time.Minute)
	if err != nil || code != 0 || out != "tool says hi\n" {
		t.Fatalf("run: %d %q %v", code, out, err)
	}
	if code, out, err := agentcall.Run(ctx, addr, token, "echo to stderr >&2", nil, time.Minute); err != nil || code != 0 || out != "to stderr\n" {
		t.Fatalf("stderr: %d %q %v", code, out, err)
	}
	if code, out, err := agentcall.Run(ctx, addr, token, "echo failing; exit 7", nil, time.Minute); err != nil || code != 7 || out != "failing\n" {
		t.Fatalf("a failing script: %d %q %v", code, out, err)
	}
	if code, out, err := agentcall.Run(ctx, addr, token, "sleep 30", nil, time.Second); err != nil || code != -1 || out != "sbx: timed out after 1s\n" {
		t.Fatalf("a script past its timeout: %d %q %v", code, out, err)
	}
	if code, out, err := agentcall.Run(ctx, addr, token, "head -c 100000 /dev/zero | tr '\\0' a; echo; echo the end", nil, time.Minute); err != nil || code != 0 ||
		len(out) != 16<<10 || !strings.HasSuffix(out, "a\nthe end\n") {
		t.Fatalf("a long output keeps its last 16 KiB: %d %d %q %v", code, len(out), out[max(0, len(out)-20):], err)
	}
	if err := agentcall.WriteFile(ctx, addr, "wrong-token-wrong-token-wrong-token", tool, nil, 0o644); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a wrong token: %v", err)
	}
}
