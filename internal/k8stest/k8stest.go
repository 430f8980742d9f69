// Package k8stest is test support for what runs on Kubernetes (issue 24): a
// real single-node cluster whose pods can run under gVisor (RuntimeClass
// "gvisor", handler runsc), started once per test binary by
// scripts/k8s.sh (docs/KUBERNETES.md, "The test cluster") and torn down
// when the binary ends, or the cluster $SBX_TEST_KUBECONFIG names, which is
// used as it is and never torn down.
//
// A package whose tests use it calls Main from its TestMain; a test calls
// Cluster for the kubeconfig and Kubectl to drive the cluster.
//
// These tests are a stage of their own, on only when asked: with
// $SBX_TEST_KUBECONFIG or $SBX_TEST_K8S=1 (else Cluster skips, in CI too,
// since the stage is not wired into scripts/test.sh yet). Once on, a
// cluster that cannot be had (not root, not Linux, no bash) ends the test
// through testenv.Missing: a skip, but a failure in CI.
//
// The first Cluster of a binary builds the cluster's binaries when they are
// not cached yet (scripts/k8s.sh build: about 6 minutes, once per host and
// version), then brings the cluster up (about 4 s). Test binaries of several
// packages take turns: a lock (/run/sbx/k8s.lock) is held from up to down,
// since a host runs one such cluster at a time.
package k8stest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sbxdev/sbx/internal/testenv"
)

// BoxImage is the image scripts/k8s.sh imports into its cluster (no
// registry is reachable from the tests): a static binary at /box with the
// commands sleep (the default), uname, dmesg, cat, echo and true
// (scripts/k8sbox). A cluster named by $SBX_TEST_KUBECONFIG needs it too.
const BoxImage = "sbx.test/box:1"

// RuntimeClass is the RuntimeClass whose pods run under gVisor.
const RuntimeClass = "gvisor"

var (
	mainCalled bool
	once       sync.Once
	state      struct {
		dir, kubeconfig, kubectl string
		missing                  string // a prerequisite the host lacks
		err                      error
	}
	downOnce sync.Once
	lock     *os.File // held while this binary's cluster is up
)

// Enabled reports whether the Kubernetes tests are on ($SBX_TEST_KUBECONFIG
// or $SBX_TEST_K8S=1).
func Enabled() bool {
	return os.Getenv("SBX_TEST_KUBECONFIG") != "" || os.Getenv("SBX_TEST_K8S") == "1"
}

// Main runs the tests of m and then stops the cluster Cluster started, if
// any; a package's TestMain calls it. SIGINT and SIGTERM stop it too.
func Main(m *testing.M) {
	mainCalled = true
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		down()
		fmt.Fprintf(os.Stderr, "k8stest: %v: the test cluster is down\n", s)
		os.Exit(1)
	}()
	code := m.Run()
	down()
	os.Exit(code)
}

// Cluster returns the path of a kubeconfig that reaches the test cluster
// as its admin, starting the cluster on the first call of the binary.
func Cluster(t testing.TB) string {
	t.Helper()
	if !Enabled() {
		t.Skip("the Kubernetes tests are off: set SBX_TEST_K8S=1 (a cluster of its own, built once: about 6 minutes) or SBX_TEST_KUBECONFIG")
	}
	if !mainCalled {
		t.Fatal("k8stest.Cluster needs the package's TestMain to call k8stest.Main")
	}
	once.Do(start)
	if state.missing != "" {
		testenv.Missing(t, state.missing)
	}
	if state.err != nil {
		t.Fatalf("the test cluster: %v", state.err)
	}
	return state.kubeconfig
}

// script is scripts/k8s.sh of this checkout.
func script() (string, error) {
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the sbx module: %v", err)
	}
	return filepath.Join(filepath.Dir(strings.TrimSpace(string(mod))), "scripts", "k8s.sh"), nil
}

func start() {
	if kc := os.Getenv("SBX_TEST_KUBECONFIG"); kc != "" {
		state.kubeconfig = kc
		state.kubectl = "kubectl"
		if k := os.Getenv("SBX_TEST_KUBECTL"); k != "" {
			state.kubectl = k
		}
		return
	}
	switch {
	case runtime.GOOS != "linux":
		state.missing = "a test Kubernetes cluster needs Linux (or set $SBX_TEST_KUBECONFIG)"
		return
	case os.Geteuid() != 0:
		state.missing = "a test Kubernetes cluster needs root (or set $SBX_TEST_KUBECONFIG)"
		return
	}
	if _, err := exec.LookPath("bash"); err != nil {
		state.missing = "a test Kubernetes cluster needs bash (or set $SBX_TEST_KUBECONFIG)"
		return
	}
	sh, err := script()
	if err != nil {
		state.err = err
		return
	}
	if out, err := run(30*time.Minute, "bash", sh, "build"); err != nil {
		state.err = fmt.Errorf("scripts/k8s.sh build: %v\n%s", err, out)
		return
	}
	if err := os.MkdirAll("/run/sbx", 0o755); err != nil {
		state.err = err
		return
	}
	f, err := os.OpenFile("/run/sbx/k8s.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		state.err = err
		return
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		state.err = fmt.Errorf("waiting for the test cluster's lock: %v", err)
		return
	}
	lock = f
	// Holding the lock, no live test binary owns a cluster of ours: one
	// still up is a killed binary's.
	prefix := filepath.Join(os.TempDir(), "sbx-k8s-")
	if out, err := run(3*time.Minute, "bash", sh, "reap", prefix); err != nil {
		state.err = fmt.Errorf("scripts/k8s.sh reap %s: %v\n%s", prefix, err, out)
		return
	}
	dir, err := os.MkdirTemp("", "sbx-k8s-")
	if err != nil {
		state.err = err
		return
	}
	state.dir = dir
	if out, err := run(5*time.Minute, "bash", sh, "up", dir); err != nil {
		state.err = fmt.Errorf("scripts/k8s.sh up %s: %v\n%s", dir, err, out)
		return
	}
	state.kubeconfig = filepath.Join(dir, "kubeconfig")
	state.kubectl = filepath.Join(dir, "bin", "kubectl")
}

// down tears down the cluster start brought up, once.
func down() {
	downOnce.Do(func() {
		if lock != nil {
			defer lock.Close()
		}
		if state.dir == "" {
			return
		}
		if state.err != nil {
			// up tore down what it started; its logs say why.
			fmt.Fprintf(os.Stderr, "k8stest: the test cluster's logs are in %s/logs\n", state.dir)
			return
		}
		sh, err := script()
		if err == nil {
			var out []byte
			if out, err = run(3*time.Minute, "bash", sh, "down", state.dir); err != nil {
				fmt.Fprintf(os.Stderr, "k8stest: scripts/k8s.sh down %s: %v\n%s", state.dir, err, out)
				return // leave the logs
			}
		}
		os.RemoveAll(state.dir)
	})
}

func run(limit time.Duration, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 10 * time.Second
	return cmd.CombinedOutput()
}

// Kubectl runs kubectl (the cluster's own build, or $SBX_TEST_KUBECTL or
// kubectl on PATH for a $SBX_TEST_KUBECONFIG cluster) with args and stdin
// on the cluster Cluster returned, and answers its standard output; a
// failure answers an error carrying its standard error.
func Kubectl(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	kc := Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	flags := []string{"--kubeconfig", kc}
	if state.dir != "" { // ours: its discovery cache too, not in $HOME
		flags = append(flags, "--cache-dir", filepath.Join(state.dir, "kubectl-cache"))
	}
	cmd := exec.CommandContext(ctx, state.kubectl, append(flags, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return "", err
	}
	return stdout.String(), nil
}
