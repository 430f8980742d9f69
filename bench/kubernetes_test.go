package bench

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/internal/k8stest"
	"github.com/sbxdev/sbx/internal/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubernetes part runs end to end against a cluster: every contender
// is timed one at a time and at once, the table has its rows, and the
// run's namespace, its pods, claims and their volumes are gone at the end.
func TestKubernetesMeasuresAndLeavesNothing(t *testing.T) {
	kubeconfig := k8stest.Cluster(t)
	cfg := Config{N: 1, Rounds: 1, Progress: testWriter{t}, Kubernetes: KubernetesConfig{Kubeconfig: kubeconfig,
		AgentImage: k8stest.AgentImage(t), RuntimeClass: k8stest.RuntimeClass, Template: k8stest.BoxImage, Parallel: 2}}
	r, err := Kubernetes(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	k := r.Kubernetes
	for name, s := range map[string]Stat{"create": k.Create, "pod": k.Pod, "kubectl-run pod": k.PodToken, "pod + claim": k.PodClaim,
		"parallel create": k.ParallelCreate, "parallel pod": k.ParallelPod, "parallel kubectl-run pod": k.ParallelPodToken, "parallel pod + claim": k.ParallelPodClaim} {
		if s.N != 1 || s.P50 <= 0 {
			t.Errorf("%s: %+v", name, s)
		}
	}
	if len(r.Rows) != 7 || r.Rows[0].Met == nil || !strings.Contains(r.Rows[0].Baseline, "bare pod") {
		t.Errorf("rows: %+v", r.Rows)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "sbx kubernetes create's time goes, one at a time") {
		t.Errorf("notes: %q", r.Notes)
	}
	checkNamespaceGone(t, kubeconfig, k.Namespace)
}

// A cancelled run (Ctrl-C) stops and still deletes its namespace.
func TestKubernetesCancelledCleansUp(t *testing.T) {
	kubeconfig := k8stest.Cluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := Config{N: 2, Rounds: 1, Progress: cancelOn{"kubernetes 1/", cancel, testWriter{t}}, Kubernetes: KubernetesConfig{Kubeconfig: kubeconfig,
		AgentImage: k8stest.AgentImage(t), RuntimeClass: k8stest.RuntimeClass, Template: k8stest.BoxImage, Parallel: 2}}
	r, err := Kubernetes(ctx, cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled run: %v", err)
	}
	checkNamespaceGone(t, kubeconfig, r.Kubernetes.Namespace)
}

// A run refuses a namespace that exists, and leaves it as it was.
func TestKubernetesRefusesANamespaceItDidNotMake(t *testing.T) {
	kubeconfig := k8stest.Cluster(t)
	cfg := Config{N: 1, Rounds: 1, Progress: testWriter{t}, Kubernetes: KubernetesConfig{Kubeconfig: kubeconfig,
		Namespace: "default", AgentImage: "unused", Template: k8stest.BoxImage}}
	if _, err := Kubernetes(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "namespace default exists") {
		t.Fatalf("a run in namespace default: %v", err)
	}
	if _, err := kubeClient(t, kubeconfig).CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace default after the run: %v", err)
	}
}

func kubeClient(t *testing.T, kubeconfig string) *kube.Client {
	rc, err := kube.Config(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kube.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkNamespaceGone fails when namespace ns, or a volume of one of its
// claims, is still there.
func checkNamespaceGone(t *testing.T, kubeconfig, ns string) {
	t.Helper()
	c := kubeClient(t, kubeconfig)
	if _, err := c.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after the run: %v", ns, err)
	}
	if left, err := leftIn(context.Background(), c, ns); err != nil || left != "" {
		t.Errorf("left of namespace %s: %q %v", ns, left, err)
	}
}
