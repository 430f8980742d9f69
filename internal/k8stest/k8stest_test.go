package k8stest

import (
	"fmt"
	"strings"
	"testing"
	"time"
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
