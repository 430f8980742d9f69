package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sbxdev/sbx/internal/testenv"
)

// Two serves on one host, each with its name and pool: B creates, kills
// and, restarted, reconciles while A's sandbox runs, and A's sandbox, its
// namespace and its table are untouched. A third serve with A's pool, or
// with A's name and another data dir, is refused at start, naming A.
func TestTwoServesOnOneHost(t *testing.T) {
	a := localServer(t, false)
	nameA, poolA := flagValue(a.opts.args, "--name"), flagValue(a.opts.args, "--pool")
	sa := a.create(map[string]any{"waitReady": true, "memoryMB": 128})
	if sa.State != "running" {
		t.Fatalf("A's sandbox: %+v", sa)
	}
	nsA := filepath.Join("/run/netns", nameA+"-"+sa.SandboxID)

	b := localServer(t, false)
	sb := b.create(map[string]any{"waitReady": true, "memoryMB": 128})
	if sb.State != "running" {
		t.Fatalf("B's sandbox: %+v", sb)
	}
	b.call("DELETE", "/api/v1/sandboxes/"+sb.ID, nil, http.StatusOK, nil)
	left := b.create(map[string]any{"waitReady": true, "memoryMB": 128})
	b.stop(syscall.SIGKILL)
	os.RemoveAll(filepath.Join(b.dataDir, "sandboxes", left.SandboxID, "sandbox.json")) // compute no row owns, for reconcile to remove
	b.restart(serverOpts{bin: sbxBin, args: b.opts.args})
	if got := b.get(left.ID); got.State == "running" {
		t.Errorf("B's sandbox %s, its record gone, is still running after reconcile", left.ID)
	}

	if got := a.get(sa.ID); got.State != "running" {
		t.Errorf("A's sandbox after B's work: %s", got.State)
	}
	if out, err := a.runsc("exec", sa.SandboxID, "/bin/sh", "-c", "hostname -I"); err != nil || strings.TrimSpace(out) == "" {
		t.Errorf("A's sandbox after B's work: %q, %v", out, err)
	}
	if _, err := os.Stat(nsA); err != nil {
		t.Errorf("A's namespace: %v", err)
	}
	if out, err := exec.Command("nft", "list", "table", "inet", nameA).CombinedOutput(); err != nil || !strings.Contains(string(out), poolA) {
		t.Errorf("A's table: %v\n%s", err, out)
	}

	other := testenv.NewInstance(t)
	templates := flagValue(a.opts.args, "--templates-dir")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--name", other.Name, "--pool", poolA},
			fmt.Sprintf("pool %s overlaps pool %s of sbx instance %q (nftables table inet %s, network state in %s)", poolA, poolA, nameA, nameA, filepath.Join(a.dataDir, "network"))},
		{[]string{"--name", nameA, "--pool", other.Pool.String()},
			fmt.Sprintf("instance name %q is in use by another sbx instance on this host, whose network state is in %s", nameA, filepath.Join(a.dataDir, "network"))},
	} {
		args := append([]string{"serve", "--data-dir", t.TempDir(), "--listen", freeAddr(t), "--runsc", os.Getenv("SBX_RUNSC"), "--templates-dir", templates}, c.args...)
		out, err := exec.Command(sbxBin, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("sbx %s: %v\n%s\nwant it refused with %q", strings.Join(args, " "), err, out, c.want)
		}
	}
	if got := a.get(sa.ID); got.State != "running" {
		t.Errorf("A's sandbox after the refused starts: %s", got.State)
	}
	if _, err := os.Stat(nsA); err != nil {
		t.Errorf("A's namespace after the refused starts: %v", err)
	}
}

// flagValue is the value that follows flag in args.
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}
