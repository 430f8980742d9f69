package cli_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/cli"
	"github.com/sbxdev/sbx/internal/testenv"
)

// TestAgentTokenFIFO starts `sbx agent --token-fifo` as the kubernetes
// provider does, hands it its token with `sbx agent give-token` on stdin,
// and reaches it through `sbx agent pipe`: the agent answers that token
// only, and the FIFO is gone once read. give-token refuses a path that is
// a plain file, which code could have put there.
func TestAgentTokenFIFO(t *testing.T) {
	if os.Getenv("SBX_TEST_AGENT_FIFO") == "1" {
		os.Exit(cli.Main([]string{"agent", "--port", os.Getenv("SBX_TEST_PORT"), "--workdir", os.Getenv("SBX_TEST_WORKDIR"), "--token-fifo", os.Getenv("SBX_TEST_FIFO")}))
	}
	if os.Getenv("SBX_TEST_AGENT_SUB") != "" {
		os.Exit(cli.Main(strings.Fields(os.Getenv("SBX_TEST_AGENT_SUB"))))
	}
	if os.Getuid() != 0 {
		testenv.Missing(t, "the token FIFO is root's: run as root")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const token = "fifo-agent-token-0123456789abcdef0123"
	dir := t.TempDir()
	fifo := filepath.Join(dir, "run", "token")
	sub := func(stdin string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAgentTokenFIFO$")
		cmd.Env = append(testenv.AgentEnv(t), "SBX_TEST_AGENT_SUB="+strings.Join(args, " "))
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, nil, 0o600)
	if out, err := sub(token+"\n", "agent", "give-token", plain); err == nil || !strings.Contains(out, "not the agent's token FIFO") {
		t.Errorf("give-token to a plain file: %v %s", err, out)
	}

	agent := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAgentTokenFIFO$")
	agent.Env = append(testenv.AgentEnv(t), "SBX_TEST_AGENT_FIFO=1", "SBX_TEST_WORKDIR="+dir, "SBX_TEST_FIFO="+fifo, "SBX_TEST_PORT=0")
	stderr, err := agent.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer agent.Process.Kill()
	if out, err := sub(token+"\n", "agent", "give-token", fifo); err != nil {
		t.Fatalf("give-token: %v %s", err, out)
	}
	addr := servingAddr(t, bufio.NewScanner(stderr))
	if _, err := os.Lstat(fifo); !os.IsNotExist(err) {
		t.Errorf("the FIFO is still there once read: %v", err)
	}
	_, port, _ := strings.Cut(addr, "]:")
	if port == "" {
		_, port, _ = strings.Cut(addr, ":")
	}
	for _, tc := range []struct {
		token string
		want  string
	}{{"wrong", "401"}, {token, "200"}} {
		req := "GET /commands HTTP/1.1\r\nHost: agent\r\nConnection: close\r\n" + apiv1.AccessTokenHeader + ": " + tc.token + "\r\n\r\n"
		out, err := sub(req, "agent", "pipe", port)
		if err != nil || !strings.HasPrefix(out, "HTTP/1.1 "+tc.want) {
			t.Errorf("through pipe with token %q: %v %.80q, want %s", tc.token, err, out, tc.want)
		}
	}
	agent.Process.Signal(syscall.SIGTERM)
	agent.Wait()
}
