package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/internal/testtemplates"
	"github.com/sbxdev/sbx/template"
)

// A real gVisor sandbox's log, followed: the output of its template's start
// command (run by the agent, tagged start) and of its first process (the
// agent's own lines) reach GET …/logs/stream, a line the start command
// prints after the follow began among them; no line shows a path of the
// host; the stream ends when the sandbox is deleted.
func TestStartCommandOutputInLogs(t *testing.T) {
	runsc := os.Getenv("SBX_RUNSC")
	switch {
	case os.Geteuid() != 0:
		testenv.Missing(t, "root, for the local gVisor provider")
	case runsc == "":
		testenv.Missing(t, "SBX_RUNSC (scripts/test.sh builds runsc and sets it)")
	}
	for _, cmd := range []string{"debootstrap", "nft"} {
		if _, err := exec.LookPath(cmd); err != nil {
			testenv.Missing(t, cmd)
		}
	}
	// A templates dir of this test's: the shared base, and a template made
	// from it whose start command prints a line, waits for a file, then
	// prints another.
	shared, err := testtemplates.Base()
	if err != nil {
		t.Fatal(err)
	}
	templates := template.Store{Dir: t.TempDir()}
	if err := os.Symlink(filepath.Join(shared.Dir, "base"), filepath.Join(templates.Dir, "base")); err != nil {
		t.Fatal(err)
	}
	const start = `echo "start began in $(pwd)"; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo start saw the file >&2; exec sleep 100000`
	if _, err := templates.Derive("started", "base", start); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--runsc", runsc, "--hibernate-after", "0", "--templates-dir", templates.Dir}, testenv.NewInstance(t).Args()...)
	s := startServer(t, serverOpts{bin: sbxBin, args: args})
	t.Cleanup(func() { // what a failed test leaves running
		for _, sb := range s.listAll("") {
			if sb.State == "running" || sb.State == "paused" {
				s.do("DELETE", "/api/v1/sandboxes/"+sb.ID, nil)
			}
		}
		for syscall.Unmount(filepath.Join(s.dataDir, "runsc", "null-netns"), syscall.MNT_DETACH) == nil {
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	sb, err := c.Create(ctx, "started", &client.CreateOptions{WaitReady: true, Timeout: time.Hour, MemoryMB: 256})
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan apiv1.LogLine)
	ended := make(chan error, 1)
	go func() {
		ended <- sb.FollowLogs(ctx, func(l apiv1.LogLine) error { lines <- l; return nil })
		close(lines)
	}()
	var read []apiv1.LogLine
	// until reads lines until one of source with text has come.
	until := func(source, text string) {
		t.Helper()
		is := func(l apiv1.LogLine) bool { return l.Source == source && strings.Contains(l.Line, text) }
		for _, l := range read {
			if is(l) {
				return
			}
		}
		for l := range lines {
			read = append(read, l)
			if is(l) {
				return
			}
		}
		t.Fatalf("the log ended (%v) before a %s line with %q:\n%s", <-ended, source, text, render(read))
	}
	until("output", "start began in /workspace") // the start command's, from before the follow
	until("output", "agent serving")             // the first process's own
	if _, err := sb.Commands.Run(ctx, "touch /tmp/go", nil); err != nil {
		t.Fatal(err)
	}
	until("output", "start saw the file") // printed after the follow began, on stderr

	if _, err := c.Delete(ctx, sb.ID()); err != nil {
		t.Fatal(err)
	}
	until("sbx", "killed")
	for l := range lines {
		read = append(read, l)
	}
	if err := <-ended; err != nil {
		t.Errorf("following ended with %v, want its clean end at the kill", err)
	}
	for _, l := range read {
		for _, host := range []string{s.dataDir, templates.Dir, shared.Dir, runsc, "/var/lib/sbx"} {
			if strings.Contains(l.Line, host) {
				t.Errorf("a line shows the host's path %s: %+v", host, l)
			}
		}
	}
}

func render(lines []apiv1.LogLine) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.At.Format(time.RFC3339Nano) + " " + l.Source + " " + l.Line + "\n")
	}
	return b.String()
}
