package e2e

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/internal/k8stest"
	"github.com/sbxdev/sbx/internal/kube"
	"github.com/sbxdev/sbx/internal/testtemplates"
	"github.com/sbxdev/sbx/kubernetes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// k8sCluster is the test cluster as a test sees it: the kubeconfig, a
// client, and the images the run exported from sbx itself and imported
// (no registry is reachable): the agent and the base template.
type k8sCluster struct {
	kubeconfig, agentImage, baseImage string
	api                               *kube.Client
}

// kubernetesCluster readies the test cluster for sbx: `sbx kubernetes
// images` and `sbx template export base`, each imported, once per run.
func kubernetesCluster(t *testing.T) *k8sCluster {
	t.Helper()
	kubeconfig := k8stest.Cluster(t)
	templates, err := testtemplates.Base()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(args ...string) {
		if out, err := exec.Command(sbxBin, args...).CombinedOutput(); err != nil {
			t.Fatalf("sbx %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("kubernetes", "images", "-o", dir, "--tag-prefix", "sbx.test/")
	run("template", "export", "base", "--templates-dir", templates.Dir, "-o", filepath.Join(dir, "base.tar"))
	c := &k8sCluster{kubeconfig: kubeconfig}
	for file, ref := range map[string]*string{"sbx-agent.tar": &c.agentImage, "base.tar": &c.baseImage} {
		k8stest.Import(t, filepath.Join(dir, file))
		*ref = imageTag(t, filepath.Join(dir, file))
	}
	rc, err := kube.Config(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if c.api, err = kube.New(rc); err != nil {
		t.Fatal(err)
	}
	return c
}

// imageTag is the tag a docker-archive tarball holds.
func imageTag(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no manifest.json: %v", path, err)
		}
		if h.Name == "manifest.json" {
			var m []struct{ RepoTags []string }
			if err := json.NewDecoder(tr).Decode(&m); err != nil || len(m) != 1 || len(m[0].RepoTags) != 1 {
				t.Fatalf("%s's manifest: %+v %v", path, m, err)
			}
			return m[0].RepoTags[0]
		}
	}
}

// namespace makes a namespace of the test's own, deleted at its end.
func (c *k8sCluster) namespace(t *testing.T) string {
	t.Helper()
	ns := "e2e-" + uuid.NewString()[:8]
	if _, err := c.api.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.api.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	return ns
}

// pod is the pod of provider sandbox id in ns, nil when there is none.
func (c *k8sCluster) pod(t *testing.T, ns, id string) *corev1.Pod {
	t.Helper()
	pod, err := c.api.CoreV1().Pods(ns).Get(context.Background(), "sbx-"+id, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// claim reports whether provider sandbox id has a claim in ns that is not
// being deleted.
func (c *k8sCluster) claim(t *testing.T, ns, id string) bool {
	t.Helper()
	pvc, err := c.api.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "sbx-"+id, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return pvc.DeletionTimestamp == nil
}

// The kubernetes provider end to end, through sbx's API and CLI, beside
// the local one in one ledger: a sandbox is a pod under gVisor whose agent
// runs commands and files and whose ports serve previews; pause deletes
// the pod and keeps the working directory, resume boots a new pod on it;
// what Kubernetes cannot do is a 501 naming it; serve SIGKILLed and
// restarted adopts the sandbox and removes a pod of its instance that no
// row owns; an image by reference runs; the wallet shows both providers;
// deletes leave no pod or claim.
func TestKubernetesSandboxes(t *testing.T) {
	c := kubernetesCluster(t)
	ns := c.namespace(t)
	s := localServer(t, false, "--also-provider", "kubernetes", "--k8s-kubeconfig", c.kubeconfig, "--k8s-namespace", ns,
		"--k8s-agent-image", c.agentImage)
	name := s.opts.args[slices.Index(s.opts.args, "--name")+1]               // the instance's, which labels its pods too
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
	defer cancel()
	cl := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	sb, err := cl.Create(ctx, "base", &client.CreateOptions{Provider: kubernetes.Name, WaitReady: true, Timeout: time.Hour, MemoryMB: 256, EnvVars: map[string]string{"GREETING": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	id := sb.SandboxID()
	if sb.Data().Provider != kubernetes.Name {
		t.Errorf("provider = %q", sb.Data().Provider)
	}
	pod := c.pod(t, ns, id)
	if pod == nil || pod.Status.Phase != corev1.PodRunning || *pod.Spec.RuntimeClassName != "gvisor" || pod.Labels[kubernetes.LabelSandbox] != sb.ID() || pod.Spec.Containers[0].Image != c.baseImage {
		t.Fatalf("the sandbox's pod: %+v", pod)
	}

	// Commands and files through the agent, the pod's first process, under gVisor.
	res, err := sb.Commands.Run(ctx, `echo out $GREETING; echo err >&2; tr '\0' ' ' < /proc/1/cmdline; echo; id -un; exit 3`, nil)
	if err != nil || res.ExitCode != 3 || !strings.HasPrefix(res.Stdout, "out hello\n") || res.Stderr != "err\n" ||
		!strings.Contains(res.Stdout, "/.sbx/sbx agent") || !strings.HasSuffix(res.Stdout, "user\n") {
		t.Fatalf("run: %+v %v", res, err)
	}
	if res, err := sb.Commands.Run(ctx, "dmesg | head -n 1", &client.CommandOptions{User: "root"}); err != nil || !strings.Contains(res.Stdout, "gVisor") {
		t.Fatalf("dmesg: %+v %v", res, err)
	}
	if _, err := sb.Files.Write(ctx, "/workspace/hello.txt", strings.NewReader("kept\n")); err != nil {
		t.Fatal(err)
	}
	if data, err := sb.Files.ReadBytes(ctx, "/workspace/hello.txt"); err != nil || string(data) != "kept\n" {
		t.Fatalf("read back: %q %v", data, err)
	}

	// A preview of a port the sandbox serves.
	if _, err := sb.Commands.StartArgs(ctx, []string{"/.sbx/sbx", "agent", "echo", "8080"}, &client.CommandOptions{Tag: "echo", DiscardOutput: true}); err != nil {
		t.Fatal(err)
	}
	if res, err := sb.Commands.Run(ctx, "for i in $(seq 100); do curl -sf localhost:8080/ && exit 0; sleep 0.1; done; exit 1", nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("the echo server never answered: %+v %v", res, err)
	}
	if got := newPreviews(t, s).echo(s.get(sb.ID()), 8080, map[string]string{apiv1.TrafficTokenHeader: sb.Data().TrafficToken}); got.Port != 8080 {
		t.Errorf("the preview reached %+v", got)
	}

	// Pause deletes the pod and keeps the claim; resume boots a new pod on
	// it: the working directory is there, processes are not.
	sleeper, err := sb.Commands.Start(ctx, "sleep 100000", &client.CommandOptions{Tag: "sleeper"})
	if err != nil {
		t.Fatal(err)
	}
	var p apiv1.Sandbox
	s.call("POST", "/api/v1/sandboxes/"+sb.ID()+"/pause", map[string]any{}, http.StatusOK, &p)
	if p.State != "paused" || c.pod(t, ns, id) != nil || !c.claim(t, ns, id) {
		t.Fatalf("paused: %s, pod %v, claim %v", p.State, c.pod(t, ns, id) != nil, c.claim(t, ns, id))
	}
	s.call("POST", "/api/v1/sandboxes/"+sb.ID()+"/resume", map[string]any{}, http.StatusOK, &p)
	if p.State != "running" || c.pod(t, ns, id) == nil || c.pod(t, ns, id).UID == pod.UID {
		t.Fatalf("resumed: %s, a new pod: %v", p.State, c.pod(t, ns, id) != nil)
	}
	if res, err := sb.Commands.Run(ctx, fmt.Sprintf("cat /workspace/hello.txt; kill -0 %d || echo gone", sleeper.PID()), nil); err != nil || res.Stdout != "kept\ngone\n" {
		t.Fatalf("after resume: %+v %v", res, err)
	}

	// What Kubernetes cannot do is a 501 naming it.
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/pause", map[string]any{"hibernate": true}, http.StatusNotImplemented, "provider kubernetes cannot hibernate")
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/snapshots", map[string]any{}, http.StatusNotImplemented, "provider kubernetes")
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/fork", map[string]any{"count": 1}, http.StatusNotImplemented, "provider kubernetes")

	// The sandbox's own measure and its pod's log.
	var m apiv1.Metrics
	s.call("GET", "/api/v1/sandboxes/"+sb.ID()+"/metrics", nil, http.StatusOK, &m)
	if m.CPUSeconds <= 0 || m.MemoryBytes <= 0 || m.Processes < 1 {
		t.Errorf("metrics: %+v", m)
	}
	var logs apiv1.LogPage
	s.call("GET", "/api/v1/sandboxes/"+sb.ID()+"/logs", nil, http.StatusOK, &logs)
	found := false
	for _, l := range logs.Items {
		found = found || strings.Contains(l.Line, "agent serving")
	}
	if !found {
		t.Errorf("the logs lack the agent's line: %+v", logs.Items)
	}

	// The CLI.
	cli := strings.SplitN(s.ok("sandbox", "create", "base", "--provider", "kubernetes", "--wait"), "\n", 2)[0]
	if out := s.ok("exec", cli, "--", "sh", "-c", "echo cli > /workspace/cli.txt; hostname"); strings.TrimSpace(out) != cli {
		t.Errorf("sbx exec: hostname %q, want %q", out, cli)
	}
	local := filepath.Join(t.TempDir(), "up.txt")
	os.WriteFile(local, []byte("uploaded\n"), 0o644)
	s.ok("files", "put", cli, "/workspace/up.txt", local)
	if out := s.ok("files", "cat", cli, "/workspace/up.txt"); out != "uploaded\n" {
		t.Errorf("files cat: %q", out)
	}
	s.ok("sandbox", "pause", cli)
	if c.pod(t, ns, cli) != nil {
		t.Error("after sbx sandbox pause the pod is there")
	}
	s.ok("sandbox", "resume", cli)
	if out := s.ok("exec", cli, "--", "cat", "/workspace/cli.txt"); out != "cli\n" {
		t.Errorf("after resume: %q", out)
	}
	s.ok("sandbox", "delete", cli, "--yes")
	if c.pod(t, ns, cli) != nil || c.claim(t, ns, cli) {
		t.Error("after sbx sandbox delete the pod or the claim is there")
	}

	// An image by reference: the cluster pulls it (here: it has it), as
	// root in /workspace; credentials are refused, the cluster has its own.
	byRef := s.create(map[string]any{"templateID": c.baseImage, "provider": kubernetes.Name, "waitReady": true})
	if res, err := cl.Commands(byRef.ID).Run(ctx, "id -un; pwd", nil); err != nil || res.Stdout != "root\n/workspace\n" {
		t.Errorf("a sandbox of image %s: %+v %v", c.baseImage, res, err)
	}
	if pod := c.pod(t, ns, byRef.SandboxID); pod == nil || pod.Spec.Containers[0].Image != c.baseImage {
		t.Errorf("the image sandbox's pod: %+v", pod)
	}
	s.call("DELETE", "/api/v1/sandboxes/"+byRef.ID, nil, http.StatusOK, nil)
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"provider": kubernetes.Name, "image": map[string]any{"uri": c.baseImage, "username": "u", "password": "p"}},
		http.StatusBadRequest, "takes no registry credentials")

	// One ledger: a local sandbox beside, both in the wallet.
	onLocal := s.create(map[string]any{"waitReady": true})
	if onLocal.Provider != "local" {
		t.Fatalf("the default provider: %s", onLocal.Provider)
	}

	// A pod of this instance that no row owns, as a crash between the
	// API server's create and the ledger's would leave.
	orphan := c.pod(t, ns, id).DeepCopy()
	orphan.ObjectMeta = metav1.ObjectMeta{Name: "sbx-orphan1", Labels: map[string]string{kubernetes.LabelInstance: name, kubernetes.LabelID: "orphan1", kubernetes.LabelSandbox: uuid.NewString()}}
	orphan.Spec.Containers[0].Command = []string{"/bin/sleep", "infinity"}
	orphan.Spec.Volumes, orphan.Spec.Containers[0].VolumeMounts = nil, nil
	if _, err := c.api.CoreV1().Pods(ns).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// serve dies; the running sandbox stays and is adopted by the next serve.
	s.stop(syscall.SIGKILL)
	s.restart(serverOpts{bin: sbxBin, args: s.opts.args})
	if got := s.get(sb.ID()); got.State != "running" {
		t.Fatalf("after restart the sandbox is %s", got.State)
	}
	if left := c.pod(t, ns, "orphan1"); left != nil && left.DeletionTimestamp == nil {
		t.Error("reconcile left the orphan pod")
	}
	again, err := cl.Connect(ctx, sb.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := again.Commands.Run(ctx, "cat /workspace/hello.txt", nil); err != nil || res.Stdout != "kept\n" {
		t.Fatalf("the adopted sandbox: %+v %v", res, err)
	}
	for _, x := range []apiv1.Sandbox{s.get(sb.ID()), onLocal} {
		var k apiv1.Sandbox
		s.call("DELETE", "/api/v1/sandboxes/"+x.ID, nil, http.StatusOK, &k)
	}
	if c.pod(t, ns, id) != nil || c.claim(t, ns, id) {
		t.Error("the deleted sandbox's pod or claim is there")
	}
	var sp apiv1.Spending
	s.call("GET", "/api/v1/org/default/credits/spending", nil, http.StatusOK, &sp)
	if spent, _ := strconv.ParseFloat(sp.ByProvider[kubernetes.Name], 64); spent <= 0 || sp.ByProvider["local"] == "" {
		t.Errorf("the wallet's spending by provider: %+v", sp.ByProvider)
	}
}
