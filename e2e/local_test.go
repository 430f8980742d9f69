package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/internal/testtemplates"
)

// localServer starts the real sbx binary with the local gVisor provider on
// a fresh data directory, with a name and pool of its own. With buildBase its first start builds the base
// template into that directory; without, it uses the base template shared
// by every package's tests. extra are more serve flags.
func localServer(t *testing.T, buildBase bool, extra ...string) *server {
	t.Helper()
	return localServerWith(t, buildBase, serverOpts{args: extra})
}

// localServerWith is localServer with options: opts.args are more serve
// flags.
func localServerWith(t *testing.T, buildBase bool, opts serverOpts) *server {
	t.Helper()
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
	// A name and pool of its own: a serve running on this host, or another
	// test's, keeps its sandboxes. Sandboxes that name no disk get 2 GB
	// (not serve's 10 GB), so that the disk admission of many tests' serves
	// side by side, each counting what its sandboxes may still write, leaves
	// room on a host that also holds the catalog's templates.
	args := append([]string{"--runsc", runsc, "--hibernate-after", "0", "--disk-mb", "2048"}, testenv.NewInstance(t).Args()...)
	if !buildBase {
		templates, err := testtemplates.Base()
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--templates-dir", templates.Dir)
	}
	opts.bin, opts.args = sbxBin, append(args, opts.args...)
	s := startServer(t, opts)
	t.Cleanup(func() { // what a failed test leaves running
		for _, sb := range s.listAll("") {
			if sb.State == "running" || sb.State == "paused" {
				s.do("DELETE", "/api/v1/sandboxes/"+sb.ID, nil)
			}
		}
		for syscall.Unmount(filepath.Join(s.dataDir, "runsc", "null-netns"), syscall.MNT_DETACH) == nil {
		}
	})
	return s
}

// runsc runs runsc on one of the server's sandboxes, as serve does.
func (s *server) runsc(args ...string) (string, error) {
	cmd := exec.Command(os.Getenv("SBX_RUNSC"), append([]string{"--root", filepath.Join(s.dataDir, "runsc"), "--platform", "systrap"}, args...)...)
	out, err := cmd.Output()
	return string(out), err
}

// The local provider end to end: the first start builds base; a sandbox
// runs in gVisor, pauses, hibernates and wakes with its files, is measured
// and logged; after serve is killed and restarted, running sandboxes are
// adopted and hibernated ones still wake; one that outgrows its memory
// ends failed with an out-of-memory diagnostic; a kill frees everything.
func TestLocalSandboxes(t *testing.T) {
	s := localServer(t, true)
	checkRunsc(t, s)
	if !strings.Contains(s.out.String(), "building the base template") {
		t.Error("the first start did not say it built the base template")
	}

	sb := s.create(map[string]any{"waitReady": true, "memoryMB": 256})
	if sb.State != "running" {
		t.Fatalf("created: %+v", sb)
	}
	if out, err := s.runsc("exec", sb.SandboxID, "/bin/sh", "-c", "cat /proc/version; echo kept > /workspace/file"); err != nil || !strings.Contains(out, "gvisor") {
		t.Fatalf("inside the sandbox: %q %v", out, err)
	}
	var m apiv1.Metrics
	s.call("GET", "/api/v1/sandboxes/"+sb.ID+"/metrics", nil, http.StatusOK, &m)
	if m.CPUSeconds <= 0 || m.MemoryBytes <= 0 || m.Processes < 1 || m.DiskUsedBytes <= 0 {
		t.Errorf("metrics: %+v", m)
	}

	var p apiv1.Sandbox
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/pause", map[string]any{}, http.StatusOK, &p)
	if p.State != "paused" || p.Hibernated {
		t.Fatalf("paused: %+v", p)
	}
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/pause", map[string]any{"hibernate": true}, http.StatusOK, &p)
	if p.State != "paused" || !p.Hibernated {
		t.Fatalf("hibernated: %+v", p)
	}
	if out, _ := s.runsc("list"); strings.Contains(out, sb.SandboxID) {
		t.Fatalf("a hibernated sandbox still has a runsc container:\n%s", out)
	}
	other := s.create(map[string]any{"waitReady": true, "memoryMB": 128})

	// serve dies; what it ran stays and is adopted by the next serve.
	s.stop(syscall.SIGKILL)
	s.restart(serverOpts{bin: sbxBin, args: s.opts.args})
	if got := s.get(other.ID); got.State != "running" {
		t.Fatalf("after restart the running sandbox is %s", got.State)
	}
	if out, err := s.runsc("exec", other.SandboxID, "true"); err != nil {
		t.Fatalf("the adopted sandbox does not answer: %v %s", err, out)
	}
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/resume", map[string]any{}, http.StatusOK, &p)
	if p.State != "running" || p.Hibernated {
		t.Fatalf("woken: %+v", p)
	}
	if out, err := s.runsc("exec", sb.SandboxID, "cat", "/workspace/file"); err != nil || out != "kept\n" {
		t.Fatalf("the file after wake: %q %v", out, err)
	}
	var logs apiv1.LogPage
	s.call("GET", "/api/v1/sandboxes/"+sb.ID+"/logs", nil, http.StatusOK, &logs)
	text := ""
	for _, l := range logs.Items {
		text += l.Source + ": " + l.Line + "\n"
	}
	for _, want := range []string{"sbx: hibernated", "local: starting with runsc", "local: restoring with runsc"} {
		if !strings.Contains(text, want) {
			t.Errorf("logs lack %q:\n%s", want, text)
		}
	}

	// Out of memory: the watcher fails the sandbox with a diagnostic.
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	cmd := exec.Command(os.Getenv("SBX_RUNSC"), "--root", filepath.Join(s.dataDir, "runsc"), "--platform", "systrap",
		"exec", "--detach", other.SandboxID, "/usr/bin/tail", "/dev/zero")
	cmd.Stdout, cmd.Stderr = devnull, devnull
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	failed := s.waitFor(other.ID, "failed", state("failed"))
	if !strings.Contains(failed.Diagnostic, "out of memory") || failed.EndReason != "error" {
		t.Errorf("OOM: %s %q", failed.EndReason, failed.Diagnostic)
	}

	var k apiv1.Sandbox
	s.call("DELETE", "/api/v1/sandboxes/"+sb.ID, nil, http.StatusOK, &k)
	for _, id := range []string{sb.SandboxID, other.SandboxID} {
		if _, err := os.Stat(filepath.Join(s.dataDir, "sandboxes", id)); !os.IsNotExist(err) {
			t.Errorf("sandbox %s left its directory: %v", id, err)
		}
		if _, err := os.Stat("/run/netns/sbx-" + id); !os.IsNotExist(err) {
			t.Errorf("sandbox %s left its network namespace: %v", id, err)
		}
		if _, err := os.Stat("/sys/fs/cgroup/memory/sbx/" + id); !os.IsNotExist(err) {
			t.Errorf("sandbox %s left its cgroup: %v", id, err)
		}
	}
	if out, _ := s.runsc("list"); strings.Count(out, "\n") > 1 {
		t.Errorf("runsc containers left:\n%s", out)
	}
	runcEngine(t, s)
}

// runcEngine restarts the server on runc, for trusted work: sandboxes run on
// the host's kernel, and what runc cannot do is a 501 that says so.
func runcEngine(t *testing.T, s *server) {
	s.restart(serverOpts{bin: sbxBin, args: append(s.opts.args, "--engine", "runc")})
	var sum apiv1.Summary
	s.call("GET", "/api/v1/observability/summary", nil, http.StatusOK, &sum)
	if len(sum.Engines) != 1 || sum.Engines[0].Name != "runc" || !sum.Engines[0].Available {
		t.Fatalf("engines on runc: %+v", sum.Engines)
	}
	sb := s.create(map[string]any{"waitReady": true, "memoryMB": 128})
	out, err := exec.Command("runc", "--root", filepath.Join(s.dataDir, "runc"), "exec", sb.SandboxID, "cat", "/proc/version").Output()
	host, _ := os.ReadFile("/proc/version")
	if err != nil || string(out) != string(host) {
		t.Fatalf("a runc sandbox's kernel: %q %v", out, err)
	}
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID+"/pause", map[string]any{"hibernate": true}, http.StatusNotImplemented, "cannot hibernate sandboxes on this host")
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "gpu": map[string]any{"type": "h100", "count": 1}},
		http.StatusNotImplemented, "runc, which cannot share GPUs")
	var p apiv1.Sandbox
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/pause", map[string]any{}, http.StatusOK, &p)
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/resume", map[string]any{}, http.StatusOK, &p)
	s.call("DELETE", "/api/v1/sandboxes/"+sb.ID, nil, http.StatusOK, &p)
	if _, err := os.Stat(filepath.Join(s.dataDir, "sandboxes", sb.SandboxID)); !os.IsNotExist(err) {
		t.Errorf("the runc sandbox left its directory: %v", err)
	}
}
