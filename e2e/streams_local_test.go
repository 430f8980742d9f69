package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/client"
)

// Streams to a real gVisor sandbox end as soon as it stops running, with
// why, though a dead sandbox's connections get no FIN: sbx exec, streaming
// while another command outgrows the sandbox's memory, exits non-zero
// saying the sandbox ran out of memory, as does a command followed through
// the client; a command followed while its sandbox is deleted ends saying
// so. Both once waited 15 s to over a minute, then said "unexpected EOF".
func TestStreamsEndWhenARealSandboxStops(t *testing.T) {
	s := localServer(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	stoppedWith := func(what string, err error, reason string) {
		t.Helper()
		var stopped *client.SandboxStoppedError
		if !errors.As(err, &stopped) || !strings.Contains(stopped.Reason, reason) {
			t.Errorf("%s ended with %v, want the sandbox's stop saying %q", what, err, reason)
		}
	}

	sb, err := c.Create(ctx, "base", &client.CreateOptions{WaitReady: true, Timeout: time.Hour, MemoryMB: 128})
	if err != nil {
		t.Fatal(err)
	}
	cli := exec.CommandContext(ctx, sbxBin, "exec", sb.SandboxID(), "--", "sh", "-c", "echo started; sleep 600")
	cli.Env = append(os.Environ(), "SBX_URL="+s.url, "SBX_DATA_DIR="+s.dataDir, "SBX_API_KEY=")
	var errOut bytes.Buffer
	cli.Stderr = &errOut
	stdout, err := cli.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "started\n" {
		t.Fatalf("sbx exec: %q %v; stderr %q", line, err, errOut.String())
	}
	followed, err := sb.Commands.Start(ctx, "sleep 600", nil)
	if err != nil {
		t.Fatal(err)
	}
	hog, err := sb.Commands.Start(ctx, "tail /dev/zero", &client.CommandOptions{DiscardOutput: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = followed.Wait(ctx)
	stoppedWith("a followed command", err, "out of memory")
	_, err = hog.Wait(ctx)
	stoppedWith("the command that outgrew the memory", err, "out of memory")
	err = cli.Wait()
	if code := cli.ProcessState.ExitCode(); err == nil || code <= 0 ||
		!strings.Contains(errOut.String(), "sbx: sandbox "+sb.SandboxID()+" failed: out of memory") {
		t.Errorf("sbx exec exited %d (%v), stderr %q", code, err, errOut.String())
	}

	sb, err = c.Create(ctx, "base", &client.CreateOptions{WaitReady: true, Timeout: time.Hour, MemoryMB: 128})
	if err != nil {
		t.Fatal(err)
	}
	followed, err = sb.Commands.Start(ctx, "sleep 600", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = followed.Wait(ctx)
	stoppedWith("a command followed while its sandbox is deleted", err, "sandbox "+sb.SandboxID()+" was deleted")
}
