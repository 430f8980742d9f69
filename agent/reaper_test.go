package agent_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
	"golang.org/x/sys/unix"
)

// TestReaperReapsOrphans runs an agent in a child process that is a child
// subreaper, as PID 1 is: orphans become its children, and only its reaper
// keeps them from staying zombies.
func TestReaperReapsOrphans(t *testing.T) {
	if os.Getenv("SBX_TEST_SUBREAPER") == "1" {
		subreaper(t)
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestReaperReapsOrphans$", "-test.v")
	cmd.Env = append(os.Environ(), "SBX_TEST_SUBREAPER=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("subreaper: %v\n%s", err, out)
	}
}

func subreaper(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t) // the agent sees it is a subreaper and reaps every child
	res := e.run(apiv1.StartCommandRequest{Cmd: "sleep 0.2 >/dev/null & echo $!; exit 3"})
	if res.end.ExitCode == nil || *res.end.ExitCode != 3 {
		t.Fatalf("the command's own exit came through the reaper wrong: %+v", res.end)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(res.stdout))
	if err != nil {
		t.Fatal(err)
	}
	// Its shell has exited, so the sleep is this process's child now; once
	// it exits, it stays a zombie unless reaped.
	e.eventually("the orphan to be reaped", func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(orphan))
		return err != nil
	})
}
