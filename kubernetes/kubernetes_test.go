package kubernetes

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/agentcall"
	"github.com/sbxdev/sbx/internal/k8stest"
	"github.com/sbxdev/sbx/providertest"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMain(m *testing.M) { k8stest.Main(m) }

// newProvider returns a provider over the test cluster in a namespace of
// its own, removed at cleanup with everything in it.
func newProvider(t *testing.T, mod func(*Config)) *Provider {
	t.Helper()
	kubeconfig := k8stest.Cluster(t)
	agentImage := k8stest.AgentImage(t)
	cfg := Config{Kubeconfig: kubeconfig, Namespace: "sbxtest-" + uuid.NewString()[:8], Name: "sbxtest", AgentImage: agentImage, StartTimeout: time.Minute}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.Namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		list, _ := p.List(ctx)
		for _, in := range list {
			p.Kill(ctx, in.Handle)
		}
		p.client.CoreV1().Namespaces().Delete(ctx, cfg.Namespace, metav1.DeleteOptions{})
	})
	return p
}

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Factory{
		New: func(t *testing.T) sbx.Provider { return newProvider(t, nil) },
		Reopen: func(t *testing.T, p sbx.Provider) sbx.Provider {
			q, err := New(p.(*Provider).cfg)
			if err != nil {
				t.Fatal(err)
			}
			return q
		},
		Template: k8stest.BoxImage,
		Timeout:  2 * time.Minute,
	})
}

// create makes a sandbox of the box image with the given token and
// registers its kill.
func create(t *testing.T, p *Provider, spec sbx.Spec) sbx.Instance {
	t.Helper()
	if spec.SandboxID == "" {
		spec.SandboxID = uuid.NewString()
	}
	spec.ProviderSandboxID = cmp.Or(spec.ProviderSandboxID, "t"+strings.ReplaceAll(uuid.NewString(), "-", "")[:12])
	spec.TemplateID = cmp.Or(spec.TemplateID, k8stest.BoxImage)
	spec.AccessToken = cmp.Or(spec.AccessToken, testToken)
	if spec.Resources.MilliCPU == 0 {
		spec.Resources = sbx.Resources{MilliCPU: 500, MemoryMB: 256}
	}
	in, err := p.Create(ctx(t), spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { p.Kill(context.Background(), in.Handle) })
	return in
}

const testToken = "kubernetes-test-token-0123456789abcdef"

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return c
}

// agentOf is the agent of in, reached as p reaches it.
func agentOf(t *testing.T, p *Provider, in sbx.Instance) agentcall.Agent {
	t.Helper()
	addr, err := p.AgentAddr(ctx(t), in.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if err := agentcall.Ready(ctx(t), addr, testToken); err != nil {
		t.Fatal(err)
	}
	return agentcall.For(sbx.Sandbox{ID: in.SandboxID, AccessToken: testToken}, addr)
}

// run runs argv in the sandbox and answers its stdout.
func run(t *testing.T, a agentcall.Agent, argv ...string) string {
	t.Helper()
	var out, errOut strings.Builder
	end, err := a.Run(ctx(t), apiv1.StartCommandRequest{Args: argv}, agentcall.Streams{Stdout: &out, Stderr: &errOut})
	if err != nil || end.ExitCode == nil || *end.ExitCode != 0 {
		t.Fatalf("%v: %+v %v %s", argv, end, err, errOut.String())
	}
	return out.String()
}

// The pod runs under gVisor, its agent answers its token at the pod's IP
// and through the API server (each connection a pods/exec), the token is
// in no pod spec or environment, metrics and logs come from the sandbox,
// and a pause is a filesystem stop: the pod goes, the working directory's
// files stay for the pod resume boots.
func TestSandboxThroughBothReaches(t *testing.T) {
	p := newProvider(t, nil)
	in := create(t, p, sbx.Spec{Env: map[string]string{"GREETING": "hello"}})
	byIP := agentOf(t, p, in)
	if out := run(t, byIP, "/box", "dmesg"); !strings.Contains(out, "Starting gVisor") {
		t.Errorf("dmesg: %q, want gVisor's", out)
	}
	viaAPI, err := New(withReach(p.cfg, ReachAPIServer))
	if err != nil {
		t.Fatal(err)
	}
	tunnelled := agentOf(t, viaAPI, in)
	if addr, _ := viaAPI.AgentAddr(ctx(t), in.Handle); !strings.HasSuffix(addr, ".kubernetes.pipe:49983") {
		t.Errorf("the apiserver reach's address is %s", addr)
	}
	environ := run(t, tunnelled, "/box", "cat", "/proc/1/environ", "/proc/1/cmdline")
	if !strings.Contains(environ, "GREETING=hello") || strings.Contains(environ, testToken) {
		t.Errorf("the agent's environ and argv: %q", environ)
	}
	pod, err := p.pods().Get(ctx(t), podName(in.ProviderSandboxID), getOpts)
	if err != nil {
		t.Fatal(err)
	}
	if spec, _ := json.Marshal(pod); strings.Contains(string(spec), testToken) {
		t.Error("the pod's spec holds the token")
	}
	if err := writeFile(ctx(t), mustAddr(t, viaAPI, in), in, "/workspace/kept.txt", "kept\n"); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(ctx(t), mustAddr(t, p, in), in, "/tmp/lost.txt", "lost\n"); err != nil {
		t.Fatal(err)
	}

	m, err := viaAPI.Metrics(ctx(t), in.Handle)
	if err != nil || m.CPUSeconds <= 0 || m.MemoryBytes <= 0 || m.Processes < 1 {
		t.Errorf("metrics: %+v %v", m, err)
	}
	logs, err := p.Logs(ctx(t), in.Handle)
	if err != nil || !slices.ContainsFunc(logs, func(l sbx.LogLine) bool { return strings.Contains(l.Line, "agent serving") && !l.At.IsZero() }) {
		t.Errorf("the pod's log lacks the agent's line: %+v %v", logs, err)
	}

	if err := p.Pause(ctx(t), in.Handle); err != nil {
		t.Fatal(err)
	}
	if _, err := p.pods().Get(ctx(t), podName(in.ProviderSandboxID), getOpts); !apierrors.IsNotFound(err) {
		t.Fatalf("a paused sandbox's pod: %v", err)
	}
	if _, err := p.claims().Get(ctx(t), podName(in.ProviderSandboxID), getOpts); err != nil {
		t.Fatalf("a paused sandbox's claim: %v", err)
	}
	if _, err := p.ResumeWithToken(ctx(t), in.Handle, testToken); err != nil {
		t.Fatal(err)
	}
	again := agentOf(t, viaAPI, in)
	if out := run(t, again, "/box", "cat", "/workspace/kept.txt"); out != "kept\n" {
		t.Errorf("after resume the working directory holds %q", out)
	}
	var errOut strings.Builder
	if end, _ := again.Run(ctx(t), apiv1.StartCommandRequest{Args: []string{"/box", "cat", "/tmp/lost.txt"}}, agentcall.Streams{Stderr: &errOut}); end.ExitCode == nil || *end.ExitCode == 0 {
		t.Errorf("a file outside the working directory outlived the pause: %+v", end)
	}
}

// writeFile writes a file through the agent at addr, as its own user (the
// box image has no /etc/passwd to name one in).
func writeFile(ctx context.Context, addr string, in sbx.Instance, path, data string) error {
	u := "http://" + agentcall.Host(sbx.Sandbox{ID: in.SandboxID}, addr) + "/files?path=" + url.QueryEscape(path)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, u, strings.NewReader(data))
	req.Header.Set(apiv1.AccessTokenHeader, testToken)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := (&http.Client{Transport: agentcall.Transport}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("PUT %s: %d %s", path, resp.StatusCode, body)
	}
	return nil
}

func mustAddr(t *testing.T, p *Provider, in sbx.Instance) string {
	addr, err := p.AgentAddr(ctx(t), in.Handle)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func withReach(cfg Config, reach string) Config {
	cfg.Reach = reach
	return cfg
}

// A pod that stays pending fails its create with the scheduler's reason,
// and leaves no pod or claim: more CPU than the node has, and a
// RuntimeClass whose nodes do not exist.
func TestPendingNamesTheSchedulersReason(t *testing.T) {
	p := newProvider(t, func(c *Config) { c.StartTimeout = 5 * time.Second; c.CPURequestPercent = 100 })
	spec := sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: "big" + uuid.NewString()[:8], TemplateID: k8stest.BoxImage, AccessToken: testToken,
		Resources: sbx.Resources{MilliCPU: 64_000, MemoryMB: 256}}
	if _, err := p.Create(ctx(t), spec); err == nil || !strings.Contains(err.Error(), "Insufficient cpu") || !strings.Contains(err.Error(), "did not run within 5s") {
		t.Errorf("64 CPUs: %v", err)
	}

	rc := "sbxtest-nowhere-" + uuid.NewString()[:8]
	if _, err := p.client.NodeV1().RuntimeClasses().Create(ctx(t), &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: rc}, Handler: "runsc",
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sbx.test/none": "true"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.client.NodeV1().RuntimeClasses().Delete(context.Background(), rc, metav1.DeleteOptions{}) })
	q, err := New(func() Config { c := p.cfg; c.RuntimeClass = rc; return c }())
	if err != nil {
		t.Fatal(err)
	}
	spec.ProviderSandboxID, spec.Resources.MilliCPU = "nowhere"+uuid.NewString()[:8], 500
	if _, err := q.Create(ctx(t), spec); err == nil || !strings.Contains(err.Error(), "didn't match Pod's node affinity/selector") {
		t.Errorf("a RuntimeClass of no node: %v", err)
	}
	if list, _ := p.List(ctx(t)); len(list) != 0 {
		t.Errorf("failed creates left %+v", list)
	}
	for claims, _ := p.claims().List(ctx(t), metav1.ListOptions{}); len(claims.Items) != 0; claims, _ = p.claims().List(ctx(t), metav1.ListOptions{}) {
		if claims.Items[0].DeletionTimestamp == nil {
			t.Fatalf("failed creates left claim %s", claims.Items[0].Name)
		}
		time.Sleep(100 * time.Millisecond) // deleted, and gone once its pod is
	}
}
