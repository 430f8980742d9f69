package k8stest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

// TestGVisorPod runs a pod of RuntimeClass gvisor on the test cluster and
// checks, from inside it, that its kernel is gVisor's.
func TestGVisorPod(t *testing.T) {
	Cluster(t) // up before the clock starts
	name := fmt.Sprintf("gvisor-%d", time.Now().UnixNano()%1e9)
	pod := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app.kubernetes.io/managed-by: sbx-k8stest}
spec:
  runtimeClassName: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: box
    image: %s
    imagePullPolicy: Never
    command: ["/box", "sleep"]
`, name, RuntimeClass, BoxImage)
	start := time.Now()
	if _, err := Kubectl(t, pod, "create", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := Kubectl(t, "", "delete", "pod", name, "--wait=true", "--timeout=60s"); err != nil {
			t.Error(err)
		}
	})
	if _, err := Kubectl(t, "", "wait", "--for=condition=Ready", "pod/"+name, "--timeout=90s"); err != nil {
		describe, _ := Kubectl(t, "", "describe", "pod", name)
		t.Fatalf("%v\n%s", err, describe)
	}
	t.Logf("gVisor pod create→Ready: %v", time.Since(start).Round(time.Millisecond))

	uname, err := Kubectl(t, "", "exec", name, "--", "/box", "uname")
	if err != nil {
		t.Fatal(err)
	}
	dmesg, err := Kubectl(t, "", "exec", name, "--", "/box", "dmesg")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("uname: %s", strings.TrimSpace(uname))
	// gVisor's kernel log starts so, and its release says gvisor (such as
	// 4.19.0-gvisor; older ones said 4.4.0).
	if !strings.Contains(dmesg, "Starting gVisor") {
		t.Errorf("the pod's kernel log is not gVisor's:\n%s", dmesg)
	}
	if f := strings.Fields(uname); len(f) < 3 || f[0] != "Linux" || !(strings.HasSuffix(f[2], "-gvisor") || f[2] == "4.4.0") {
		t.Errorf("the pod's uname is not gVisor's: %q", uname)
	}
}

// apply creates the objects of yaml and deletes them (waiting until they
// are gone) when t ends.
func apply(t *testing.T, yaml string) {
	t.Helper()
	if _, err := Kubectl(t, yaml, "create", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := Kubectl(t, yaml, "delete", "-f", "-", "--ignore-not-found", "--wait=true", "--timeout=60s"); err != nil {
			t.Error(err)
		}
	})
}

// TestVolume binds a claim of the default StorageClass, writes to it from a
// gVisor pod, finds what it wrote in the claim's directory on the host, and
// checks that deleting the claim removes that directory.
func TestVolume(t *testing.T) {
	Cluster(t)
	name := fmt.Sprintf("vol-%d", time.Now().UnixNano()%1e9)
	// Claim and pod at once, as the kubernetes provider makes them: the
	// scheduler retries the pod once the claim is bound.
	claim := fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %s
  labels: {app.kubernetes.io/managed-by: sbx-k8stest}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`, name)
	pod := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app.kubernetes.io/managed-by: sbx-k8stest}
spec:
  runtimeClassName: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: box
    image: %s
    imagePullPolicy: Never
    command: ["/box", "sleep"]
    volumeMounts: [{name: work, mountPath: /work}]
  volumes: [{name: work, persistentVolumeClaim: {claimName: %s}}]
`, name, RuntimeClass, BoxImage, name)
	start := time.Now()
	if _, err := Kubectl(t, claim, "create", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	claimDeleted := false
	t.Cleanup(func() {
		if !claimDeleted {
			Kubectl(t, "", "delete", "pvc", name, "--ignore-not-found", "--wait=true", "--timeout=60s")
		}
	})
	apply(t, pod)
	if _, err := Kubectl(t, "", "wait", "--for=jsonpath={.status.phase}=Bound", "pvc/"+name, "--timeout=90s"); err != nil {
		describe, _ := Kubectl(t, "", "describe", "pvc", name)
		t.Fatalf("%v\n%s", err, describe)
	}
	t.Logf("claim create→Bound: %v", time.Since(start).Round(time.Millisecond))
	if _, err := Kubectl(t, "", "wait", "--for=condition=Ready", "pod/"+name, "--timeout=90s"); err != nil {
		describe, _ := Kubectl(t, "", "describe", "pod", name)
		t.Fatalf("%v\n%s", err, describe)
	}
	t.Logf("claim and pod create→pod Ready: %v", time.Since(start).Round(time.Millisecond))

	class, err := Kubectl(t, "", "get", "pvc", name, "-o", "jsonpath={.spec.storageClassName}")
	if err != nil {
		t.Fatal(err)
	}
	if class != StorageClass {
		t.Errorf("the claim's StorageClass is %q, not the default %q", class, StorageClass)
	}
	if _, err := Kubectl(t, "", "exec", name, "--", "/box", "write", "/work/hello", "from", "gVisor"); err != nil {
		t.Fatal(err)
	}
	if got, err := Kubectl(t, "", "exec", name, "--", "/box", "cat", "/work/hello"); err != nil || got != "from gVisor\n" {
		t.Fatalf("the pod read back %q, %v", got, err)
	}
	if state.dir == "" {
		return // not ours: its volumes are not on this host
	}
	pv, err := Kubectl(t, "", "get", "pvc", name, "-o", "jsonpath={.spec.volumeName}")
	if err != nil {
		t.Fatal(err)
	}
	path, err := Kubectl(t, "", "get", "pv", pv, "-o", "jsonpath={.spec.hostPath.path}")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != HostPathDir {
		t.Errorf("the volume is at %s, not under %s", path, HostPathDir)
	}
	if b, err := os.ReadFile(filepath.Join(path, "hello")); err != nil || string(b) != "from gVisor\n" {
		t.Errorf("on the host, %s/hello holds %q, %v", path, b, err)
	}

	// The claim deleted (its pod first), the volume goes (reclaim policy
	// Delete), and with it its directory: the provisioner removes the
	// directory before it deletes the volume.
	if _, err := Kubectl(t, "", "delete", "pod", name, "--wait=true", "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	if _, err := Kubectl(t, "", "delete", "pvc", name, "--wait=true", "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	claimDeleted = true
	if _, err := Kubectl(t, "", "wait", "--for=delete", "pv/"+pv, "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the deleted claim's directory %s: %v, want it gone", path, err)
	}
}

// TestPodPostgres runs a program of its own image (PackImage, Import) in a
// gVisor pod that logs in to PodPostgres's database and writes a row, and
// reads that row from the host.
func TestPodPostgres(t *testing.T) {
	Cluster(t)
	dsn := PodPostgres(t)
	bin := filepath.Join(t.TempDir(), "pgping")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./testdata/pgping")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building pgping: %v\n%s", err, out)
	}
	const image = "sbx.test/pgping:1"
	Import(t, PackImage(t, bin, image))

	name := fmt.Sprintf("pgping-%d", time.Now().UnixNano()%1e9)
	apply(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app.kubernetes.io/managed-by: sbx-k8stest}
spec:
  runtimeClassName: %s
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: pgping
    image: %s
    imagePullPolicy: Never
    command: ["/box"]
    env: [{name: DSN, value: %q}]
`, name, RuntimeClass, image, dsn))
	if _, err := Kubectl(t, "", "wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/"+name, "--timeout=120s"); err != nil {
		logs, _ := Kubectl(t, "", "logs", name)
		describe, _ := Kubectl(t, "", "describe", "pod", name)
		t.Fatalf("%v\nlogs:\n%s\n%s", err, logs, describe)
	}
	logs, err := Kubectl(t, "", "logs", name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the pod: %s", strings.TrimSpace(logs))
	if !strings.HasPrefix(logs, "pgping: ok") {
		t.Errorf("the pod's output: %q", logs)
	}

	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var said string
	if err := c.QueryRow(ctx, "SELECT said FROM pgping").Scan(&said); err != nil || said != "from a pod" {
		t.Errorf("the row the pod wrote: %q, %v", said, err)
	}
}
