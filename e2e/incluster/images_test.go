package incluster

import (
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/internal/k8stest"
)

// The images sbx makes run on the cluster as a sandbox pod is made of
// them: the base template's image under gVisor, with the agent's image
// mounted at /.sbx (an image volume); serve's image runs `sbx version` as
// its user. Nothing of the kubernetes provider: the images alone.
func TestImagesRun(t *testing.T) {
	k8stest.Cluster(t)
	base := importImages(t, buildSbx(t))
	const ns = "sbx-images-test"
	kubectl(t, "create", "namespace", ns)
	t.Cleanup(func() { k8stest.Kubectl(t, "", "delete", "namespace", ns, "--wait", "--timeout=3m") })
	manifest := `
apiVersion: v1
kind: Pod
metadata: {name: sandbox, namespace: ` + ns + `}
spec:
  restartPolicy: Never
  runtimeClassName: ` + k8stest.RuntimeClass + `
  terminationGracePeriodSeconds: 1
  containers:
  - name: box
    image: ` + base + `
    imagePullPolicy: Never
    command: [/bin/sh, -c, 'id -un; ls -l /.sbx/sbx; /.sbx/sbx; uname -r']
    volumeMounts: [{name: agent, mountPath: /.sbx}]
  volumes:
  - name: agent
    image: {reference: "sbx-agent:e2e", pullPolicy: Never}
---
apiVersion: v1
kind: Pod
metadata: {name: serve, namespace: ` + ns + `}
spec:
  restartPolicy: Never
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: sbx
    image: sbx:e2e
    imagePullPolicy: Never
    args: [version, --json]
    securityContext: {readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`
	if _, err := k8stest.Kubectl(t, manifest, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ pod, want string }{
		{"sandbox", "user\n-rwxr-xr-x"},
		{"sandbox", "usage: sbx-agent agent"},
		{"sandbox", "gvisor"},
		{"serve", `"version": "(devel)"`},
	} {
		eventually(t, c.pod+" ran", 3*time.Minute, func() (bool, string) {
			phase := kubectl(t, "-n", ns, "get", "pod", c.pod, "-o", "jsonpath={.status.phase}")
			return phase == "Succeeded" || phase == "Failed", phase
		})
		if out := kubectl(t, "-n", ns, "logs", c.pod); !strings.Contains(out, c.want) {
			t.Errorf("%s's output lacks %q:\n%s", c.pod, c.want, out)
		}
	}
}
