// Package k8stest is test support for what runs on Kubernetes (issue 24): a
// real single-node cluster whose pods can run under gVisor (RuntimeClass
// "gvisor", handler runsc) and whose PersistentVolumeClaims bind (the
// default StorageClass "sbx-test"), made by scripts/k8s.sh
// (docs/KUBERNETES.md, "The test cluster").
//
// A package whose tests use it calls Main from its TestMain; a test calls
// Cluster for the kubeconfig and Kubectl to drive the cluster, Import to
// load an image into it (PackImage packs one), PodPostgres for a database
// its pods reach.
//
// Which cluster, in this order:
//   - $SBX_TEST_K8S_DIR: the directory of a scripts/k8s.sh cluster that is up,
//     shared by every test binary of the run and never torn down by them
//     (scripts/test.sh starts one for its go test and downs it after);
//   - $SBX_TEST_KUBECONFIG: any cluster, used as it is and never torn down
//     (Import and PodPostgres need one of ours);
//   - else one this test binary starts on its first Cluster and tears down
//     when it ends: test binaries of several packages then take turns, since
//     a host runs one such cluster at a time (a lock, /run/sbx/k8s.lock, held
//     from up to down).
//
// A cluster that cannot be had (not root, not Linux, no bash, its binaries
// not built: scripts/k8s.sh build, once per host and version, about 9
// minutes) ends the test through testenv.Missing: a skip, a failure in CI.
package k8stest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
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

	"github.com/jackc/pgx/v5"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/internal/testpg"
)

// BoxImage is the image scripts/k8s.sh imports into its cluster (no
// registry is reachable from the tests): a static binary at /box with the
// commands sleep (the default), uname, dmesg, cat, echo, write and true
// (scripts/k8sbox). A cluster named by $SBX_TEST_KUBECONFIG needs it too.
const BoxImage = "sbx.test/box:1"

// RuntimeClass is the RuntimeClass whose pods run under gVisor.
const RuntimeClass = "gvisor"

// StorageClass is the test cluster's default StorageClass: a claim gets a
// directory under HostPathDir on the host, removed with the claim.
const StorageClass = "sbx-test"

// HostPathDir is where the claims of StorageClass live on the host
// (kube-controller-manager's hostpath provisioner fixes it).
const HostPathDir = "/tmp/hostpath_pv"

// Gateway is the host's address on the test cluster's pod network (the
// bridge sbxk8s0, 10.88.0.0/24): what a pod reaches the host at.
const Gateway = "10.88.0.1"

var (
	mainCalled bool
	once       sync.Once
	state      struct {
		// dir is the scripts/k8s.sh cluster's directory (ours or
		// $SBX_TEST_K8S_DIR's); "" for $SBX_TEST_KUBECONFIG's.
		dir                 string
		own                 bool // started by this binary, downed when it ends
		kubeconfig, kubectl string
		missing             string // a prerequisite the host lacks
		err                 error
	}
	downOnce sync.Once
	lock     *os.File // held while this binary's cluster is up
)

// Main runs the tests of m and then stops the cluster Cluster started, if
// any; a package's TestMain calls it. SIGINT and SIGTERM stop it too.
func Main(m *testing.M) { os.Exit(Around(m.Run)) }

// Around is Main for a TestMain that does more around its tests: it runs
// run (which runs the tests), stops the cluster Cluster started, and
// answers run's exit code.
func Around(run func() int) int {
	mainCalled = true
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		down()
		fmt.Fprintf(os.Stderr, "k8stest: %v: the test cluster is down\n", s)
		os.Exit(1)
	}()
	code := run()
	down()
	return code
}

// Cluster returns the path of a kubeconfig that reaches the test cluster
// as its admin, starting the cluster on the first call of the binary when
// no cluster is named by $SBX_TEST_K8S_DIR or $SBX_TEST_KUBECONFIG.
func Cluster(t testing.TB) string {
	t.Helper()
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
	if dir := os.Getenv("SBX_TEST_K8S_DIR"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "run", "up")); err != nil {
			state.err = fmt.Errorf("$SBX_TEST_K8S_DIR=%s holds no cluster that is up: %v", dir, err)
			return
		}
		state.dir = dir
		state.kubeconfig = filepath.Join(dir, "kubeconfig")
		state.kubectl = filepath.Join(dir, "bin", "kubectl")
		return
	}
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
	// Building is left to scripts/k8s.sh build (scripts/test.sh runs it):
	// about 9 minutes on a fresh host is not for a test to spend unasked.
	if out, err := run(time.Minute, "bash", sh, "built"); err != nil {
		state.missing = fmt.Sprintf("the test cluster's binaries, built and current: run scripts/k8s.sh build (once per host and version, about 9 minutes; scripts/test.sh does) (%v: %s)", err, bytes.TrimSpace(out))
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
	state.dir, state.own = dir, true
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
		if !state.own {
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

// ours ends t through testenv.Missing unless the cluster is one of
// scripts/k8s.sh's (this binary's or $SBX_TEST_K8S_DIR's), whose
// containerd and pod network are on this host; what answers says why.
func ours(t testing.TB, what string) {
	t.Helper()
	Cluster(t)
	if state.dir == "" {
		testenv.Missing(t, what+" needs a scripts/k8s.sh cluster on this host ($SBX_TEST_K8S_DIR or the test's own), not $SBX_TEST_KUBECONFIG's")
	}
}

// PackImage packs the static Linux binary bin as /box (also /pause, its
// entrypoint) into an image tarball tagged tag, for Import, and answers its
// path (under t.TempDir()). A pod runs it with command ["/box", ARGS…].
func PackImage(t testing.TB, bin, tag string) string {
	t.Helper()
	sh, err := script()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "image.tar")
	if b, err := run(2*time.Minute, "bash", sh, "pack", out, bin, tag); err != nil {
		t.Fatalf("scripts/k8s.sh pack: %v\n%s", err, b)
	}
	return out
}

// Import loads the image tarball tarPath (docker-archive or OCI, as docker
// save or PackImage writes) into the test cluster's containerd, in the
// k8s.io namespace where the kubelet finds it: the tests have no registry,
// so a pod uses it with imagePullPolicy Never. The image stays until the
// cluster is downed (another test of a shared cluster may use its tag).
func Import(t testing.TB, tarPath string) {
	t.Helper()
	ours(t, "k8stest.Import")
	ctr := filepath.Join(state.dir, "bin", "ctr")
	sock := filepath.Join(state.dir, "containerd", "containerd.sock")
	if out, err := run(5*time.Minute, ctr, "--address", sock, "-n", "k8s.io", "images", "import", tarPath); err != nil {
		t.Fatalf("ctr images import %s: %v\n%s", tarPath, err, out)
	}
}

// KillContainer kills the processes of the container whose ID a pod's
// status names (containerd://ID) at once, as a crash or the OOM killer
// would: SIGKILL through the cluster's containerd, no grace and no signal
// to catch (a pod deleted with no grace still has its processes sent
// SIGTERM first).
func KillContainer(t testing.TB, id string) {
	t.Helper()
	ours(t, "k8stest.KillContainer")
	ctr := filepath.Join(state.dir, "bin", "ctr")
	sock := filepath.Join(state.dir, "containerd", "containerd.sock")
	if out, err := run(time.Minute, ctr, "--address", sock, "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", strings.TrimPrefix(id, "containerd://")); err != nil {
		t.Fatalf("ctr tasks kill %s: %v\n%s", id, err, out)
	}
}

// PodPostgres creates a database of its own for t, owned by a role of its
// own with a password, on the tests' PostgreSQL (internal/testpg's server),
// and answers a URL of it that the test cluster's pods can use:
// postgres://ROLE:PASSWORD@10.88.0.1:PORT/DB?sslmode=disable. Database and
// role are dropped when t ends.
//
// PORT is a relay this test binary listens on at Gateway until t ends,
// which forwards each connection to the server's TCP address (for the
// default server, 127.0.0.1:5432, where Debian's pg_hba.conf lets in a
// password login): the server itself cannot listen on 10.88.0.1 without a
// restart (listen_addresses is read at start only, and the address exists
// only while a cluster is up), which would cut every other test's
// connections.
func PodPostgres(t testing.TB) string {
	t.Helper()
	ours(t, "k8stest.PodPostgres")
	admin := testpg.Server()
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		t.Fatalf("the tests' PostgreSQL %s: %v", admin, err)
	}
	target := net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	if strings.HasPrefix(cfg.Host, "/") { // a Unix socket: the same server on loopback
		target = net.JoinHostPort("127.0.0.1", fmt.Sprint(cfg.Port))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("a PostgreSQL server at %s ($SBX_TEST_POSTGRES): %v", admin, err))
	}
	defer c.Close(ctx)
	name := "sbxpod_" + strings.ToLower(rand.Text()[:12])
	password := rand.Text()
	if _, err := c.Exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", name, password)); err != nil {
		t.Fatalf("creating the pods' role: %v", err)
	}
	if _, err := c.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s OWNER %s", name, name)); err != nil {
		t.Fatalf("creating the pods' database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("dropping the pods' database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		for _, q := range []string{"DROP DATABASE IF EXISTS " + name + " WITH (FORCE)", "DROP ROLE IF EXISTS " + name} {
			if _, err := c.Exec(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})

	ln, err := net.Listen("tcp", net.JoinHostPort(Gateway, "0"))
	if err != nil {
		t.Fatalf("listening on the pod network's gateway: %v", err)
	}
	r := &relay{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go r.serve()
	t.Cleanup(r.close)
	port := ln.Addr().(*net.TCPAddr).Port
	dsn := fmt.Sprintf("postgres://%s:%s@%s:%d/%s?sslmode=disable", name, password, Gateway, port, name)

	// The way a pod comes, from the host: relay, server and password login.
	pc, err := pgx.Connect(ctx, dsn)
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("a password login to the tests' PostgreSQL at %s (pg_hba.conf: host … scram-sha-256 for its address): %v", target, err))
	}
	pc.Close(ctx)
	return dsn
}

// PodAPIServer answers the address, Gateway:PORT, at which the test
// cluster's pods reach its API server, for a program in a pod that drives
// the cluster (serve on the cluster it drives): the cluster has no
// kube-proxy, so the Service kubernetes routes nowhere, and the API server
// listens on loopback. PORT is a relay this test binary listens on until t
// ends. The server's certificate does not name Gateway: a client names the
// server kubernetes (a kubeconfig's tls-server-name).
func PodAPIServer(t testing.TB) string {
	t.Helper()
	ours(t, "k8stest.PodAPIServer")
	server, err := Kubectl(t, "", "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
	if err != nil {
		t.Fatal(err)
	}
	target := strings.TrimPrefix(strings.TrimSpace(server), "https://")
	ln, err := net.Listen("tcp", net.JoinHostPort(Gateway, "0"))
	if err != nil {
		t.Fatalf("listening on the pod network's gateway: %v", err)
	}
	r := &relay{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go r.serve()
	t.Cleanup(r.close)
	return ln.Addr().String()
}

// relay forwards the TCP connections ln accepts to target, until close.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.Close()
		return false
	}
	r.conns[c] = true
	return true
}

func (r *relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

func (r *relay) serve() {
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		if !r.track(in) {
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer in.Close()
			defer r.untrack(in)
			out, err := net.DialTimeout("tcp", r.target, 10*time.Second)
			if err != nil || !r.track(out) {
				return
			}
			defer r.untrack(out)
			defer out.Close()
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				io.Copy(dst, src)
				dst.(*net.TCPConn).CloseWrite()
				done <- struct{}{}
			}
			go pipe(out, in)
			go pipe(in, out)
			<-done
			<-done
		}()
	}
}

// close stops accepting, cuts the connections in flight and waits for
// their goroutines.
func (r *relay) close() {
	r.ln.Close()
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
