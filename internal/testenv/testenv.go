// Package testenv holds the one rule for tests whose prerequisites a host may
// lack (root, runsc, debootstrap, …): skip and say why, except in CI
// (CI=true), where a skip would hide a missing install step and so fails.
package testenv

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// InCI reports whether the tests run in CI.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing ends t for a missing prerequisite: a failure in CI, else a skip.
func Missing(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatal("missing prerequisite: " + why)
	}
	t.Skip("missing prerequisite: " + why)
}

// BuildSbx builds the sbx binary as it ships (scripts/lib.sh's build_sbx:
// static, carrying the agent-only build its sandboxes run) into dir and
// returns its path: for tests that run it as a CLI, a server or a
// sandbox's agent.
func BuildSbx(dir string) (string, error) {
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the sbx module: %v", err)
	}
	lib := filepath.Join(filepath.Dir(strings.TrimSpace(string(mod))), "scripts", "lib.sh")
	bin := filepath.Join(dir, "sbx")
	build := exec.Command("bash", "-c", `. "$0" && build_sbx "$1"`, lib, bin)
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building sbx: %v\n%s", err, out)
	}
	return bin, nil
}

// AgentEnv is the environment for an agent served on the host by a test:
// the test's own, with HOME moved to an empty directory, so that the login
// shells the agent starts read none of the host user's profile (a profile
// that hangs, as pyenv's does behind a stale lock, would hang the test).
func AgentEnv(t testing.TB) []string {
	return append(os.Environ(), "HOME="+t.TempDir())
}

// Instance is the name and address pool of an sbx instance a test starts
// (serve --name and --pool, the local provider's table and cgroup parent,
// sbx bench's Name and Pool), its own on this host: tests beside a running
// serve, and beside each other, never share its table, namespaces,
// cgroups or addresses.
type Instance struct {
	Name string       // "sbxtest<N>"
	Pool netip.Prefix // a /23 of 10.240.0.0/12
}

// Args are the serve flags that give a serve this instance.
func (in Instance) Args() []string { return []string{"--name", in.Name, "--pool", in.Pool.String()} }

// instanceSlots is how many instances the tests of one host may hold at once.
const instanceSlots = 2048

// NewInstance hands t an instance of its own until t ends: slot N, held by
// a lock on a file, so that no other test process on the host holds it.
// Whatever a test that held slot N before left on the host (a crashed run's
// nftables table, namespaces, empty cgroups) is removed first; at cleanup,
// after the cleanups t registers later, its table and cgroup parent are
// removed again.
func NewInstance(t testing.TB) Instance {
	t.Helper()
	dir := "/run/sbx/tests"
	if os.Geteuid() != 0 {
		dir = filepath.Join(os.TempDir(), "sbx-tests")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for n := range instanceSlots {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%d.lock", n)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		base := netip.MustParseAddr("10.240.0.0").As4()
		base[1] += byte(n >> 7)
		base[2] = byte(n << 1)
		in := Instance{Name: fmt.Sprintf("sbxtest%d", n), Pool: netip.PrefixFrom(netip.AddrFrom4(base), 23)}
		removeLeftovers(in.Name)
		t.Cleanup(func() {
			removeLeftovers(in.Name)
			f.Close()
		})
		return in
	}
	t.Fatalf("all %d test instance slots in %s are held", instanceSlots, dir)
	return Instance{}
}

// removeLeftovers removes what an instance named name left on the host:
// its nftables table, namespaces and cgroups, killing what still runs in
// them (a test instance's name is no server's). Only root can.
func removeLeftovers(name string) {
	if os.Geteuid() != 0 {
		return
	}
	exec.Command("nft", "delete", "table", "inet", name).Run()
	namespaces, _ := filepath.Glob(filepath.Join("/run/netns", name+"-*"))
	for _, ns := range namespaces {
		syscall.Unmount(ns, syscall.MNT_DETACH)
		os.Remove(ns)
	}
	parents, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", name))
	parents = append(parents, filepath.Join("/sys/fs/cgroup", name))
	for _, p := range parents {
		children, _ := filepath.Glob(filepath.Join(p, "*"))
		for _, c := range children {
			if info, err := os.Stat(c); err == nil && info.IsDir() {
				emptyCgroup(c)
			}
		}
		os.Remove(p)
	}
}

// emptyCgroup kills every process in cgroup dir (a sandbox a crashed test
// left running) and removes it once it is empty, waiting at most a few
// seconds.
func emptyCgroup(dir string) {
	for try := 0; try < 100; try++ {
		procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(procs)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(30 * time.Millisecond)
	}
}
