package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbxdev/sbx/agent"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/cli"
	"github.com/sbxdev/sbx/internal/testenv"
)

// TestAgentCommand runs `sbx agent` in a child process (this test binary)
// as serve starts it: the token on descriptor 3, a port, a workdir. An
// SBX_ACCESS_TOKEN in its environment is neither the token nor passed on.
func TestAgentCommand(t *testing.T) {
	if os.Getenv("SBX_TEST_AGENT_COMMAND") == "1" {
		os.Exit(cli.Main([]string{"agent", "--port", "0", "--workdir", os.Getenv("SBX_TEST_WORKDIR"), "--token-fd", "3", "--start", "sleep 1000"}))
	}
	if code, _, errOut := sbx(t, "agent"); code == 0 || !strings.Contains(errOut, "--token-fd") {
		t.Errorf("without a token: exit %d, stderr %q", code, errOut)
	}
	if _, out, _ := sbx(t, "--help"); strings.Contains(out, "agent") {
		t.Errorf("agent is not hidden:\n%s", out)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const token = "cmd-agent-token-0123456789abcdef0123"
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAgentCommand$")
	cmd.Env = append(testenv.AgentEnv(t), "SBX_TEST_AGENT_COMMAND=1", "SBX_TEST_WORKDIR="+t.TempDir(), agent.TokenEnv+"=not-the-token")
	tokenR, tokenW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	tokenW.WriteString(token + "\n")
	tokenW.Close()
	cmd.ExtraFiles = []*os.File{tokenR} // descriptor 3, as runsc passes it

	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tokenR.Close()
	defer cmd.Process.Kill()
	url := "http://" + servingAddr(t, bufio.NewScanner(stderr))

	run := func(tok string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/commands", strings.NewReader(`{"cmd":"echo token=$`+agent.TokenEnv+`"}`))
		req.Header.Set(apiv1.AccessTokenHeader, tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out strings.Builder
		for dec := json.NewDecoder(resp.Body); ; {
			var ev apiv1.CommandEvent
			if dec.Decode(&ev) != nil {
				return resp.StatusCode, out.String()
			}
			out.Write(ev.Data)
		}
	}
	if code, _ := run("wrong"); code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", code)
	}
	if code, _ := run("not-the-token"); code != http.StatusUnauthorized {
		t.Errorf("the environment's token: %d", code)
	}
	if code, out := run(token); code != http.StatusOK || out != "token=\n" {
		t.Errorf("a command: %d %q, want the token kept from it", code, out)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v", err)
	}
}

// servingAddr reads the agent's log until it says where it serves.
func servingAddr(t *testing.T, log *bufio.Scanner) string {
	t.Helper()
	for log.Scan() {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(log.Bytes(), &line) == nil && line.Msg == "agent serving" {
			go func() {
				for log.Scan() {
				}
			}()
			return line.Addr
		}
	}
	t.Fatal("the agent exited before serving")
	return ""
}
