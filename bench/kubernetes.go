package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/kube"
	"github.com/sbxdev/sbx/kubernetes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubernetes contender (`sbx bench lifecycle --provider kubernetes`)
// is the kubernetes provider, set up as serve sets it up (an instance name
// and a namespace of the run's own), against bare pods of the same image,
// RuntimeClass and resources in the same cluster and run: a sandbox's
// create timed from Create's call until its agent answers /ready with the
// token, which is what a create with waitReady costs, against a bare
// pod's create until its Ready condition, seen through a watch (the
// issue's baseline); against the pod `kubectl run` makes, whose
// service-account token is a volume, as the agent's image is one; and
// against a bare pod with a claim of the same StorageClass, made once the
// claim is Bound as the provider makes its pod, so that the table shows
// what the claim costs apart from what sbx costs (the image volume of the
// agent, the exec that hands it its token, its start). The
// same three are also timed Parallel at once, the wall time until all are
// ready. Rounds take turns, the first of each rotating; between turns
// everything made is removed and gone, untimed.

// KubernetesConfig is the cluster of the kubernetes contender.
type KubernetesConfig struct {
	// Kubeconfig is a kubeconfig file; "": the in-cluster credentials.
	Kubeconfig string
	// Namespace is made by the run and deleted at its end, with all in it;
	// one that exists already is refused. Default sbxbench-<tag>.
	Namespace    string
	AgentImage   string // the sbx-agent image (kubernetes.Config.AgentImage)
	RuntimeClass string // default kubernetes.DefaultRuntimeClass
	StorageClass string // "": the cluster's default class
	Template     string // the image both run, as a template ID naming an image
	Reach        string // how the bench reaches the agents; default kubernetes.ReachPodIP
	Parallel     int    // creates at once in the parallel part; default 10
}

// The resources of every pod: ten at once, each requesting a quarter of
// its CPU limit as the provider does, fit a node of 2 cores.
const (
	kubeMilliCPU = 500
	kubeMemoryMB = 256
)

// KubernetesResult is the kubernetes provider against bare pods, measured
// in the same cluster and run.
type KubernetesResult struct {
	Cluster      string `json:"cluster"`
	Namespace    string `json:"namespace"`
	Image        string `json:"image"`
	RuntimeClass string `json:"runtime_class"`
	StorageClass string `json:"storage_class"` // "": the cluster's default

	Create   Stat `json:"create"`    // Create to the agent answering /ready
	Pod      Stat `json:"pod"`       // a bare pod's create to its Ready condition
	PodToken Stat `json:"pod_token"` // the same of a pod as `kubectl run` makes it
	PodClaim Stat `json:"pod_claim"` // a claim's and a bare pod's create to its Ready condition

	Parallel         int  `json:"parallel"`
	ParallelCreate   Stat `json:"parallel_create"` // wall time of Parallel creates to all agents ready, one sample a round
	ParallelPod      Stat `json:"parallel_pod"`
	ParallelPodToken Stat `json:"parallel_pod_token"`
	ParallelPodClaim Stat `json:"parallel_pod_claim"`

	// Split is where the sequential creates' time went: the p50 of each
	// mark, from the create's start (marks seen through a watch of the
	// namespace, so each is late by the watch's delivery).
	Split         []Mark `json:"split,omitempty"`
	ParallelSplit []Mark `json:"parallel_split,omitempty"` // the same of every parallel create
}

// Mark is when something was seen, from a create's start.
type Mark struct {
	Contender string `json:"contender"`
	What      string `json:"what"`
	At        Stat   `json:"at"`
}

// kubeLab is the kubernetes contender of a run: the provider, a client of
// the same cluster for the baselines, and the namespace they share.
type kubeLab struct {
	cfg    Config
	k      KubernetesConfig
	name   string // the provider's instance name, and the baselines' label
	client *kube.Client
	p      *kubernetes.Provider
	seen   *observer
	madeNS bool

	mu  sync.Mutex
	seq int
}

// Kubernetes runs the kubernetes contender alone: `sbx bench lifecycle
// --provider kubernetes`. It returns what it measured, with the table
// filled in, also when it stops on an error.
func Kubernetes(ctx context.Context, cfg Config) (r *Report, err error) {
	cfg.defaults()
	k := &kubeLab{cfg: cfg, k: cfg.Kubernetes}
	k.defaults()
	r = &Report{Date: time.Now().UTC().Format("2006-01-02"), Host: host(), Template: k.k.Template, Load: "load average " + loadAverage() + " at start"}
	res := &KubernetesResult{Namespace: k.k.Namespace, Image: k.k.Template, RuntimeClass: k.k.RuntimeClass, StorageClass: k.k.StorageClass, Parallel: k.k.Parallel}
	r.Kubernetes = res
	defer func() {
		r.Load += ", " + loadAverage() + " at end"
		err = errors.Join(err, k.close())
		r.Rows, r.Notes = r.rows(), r.notes()
	}()
	if err := k.open(ctx, r); err != nil {
		return r, err
	}
	for _, phase := range []func(context.Context, *KubernetesResult) error{k.sequential, k.parallel} {
		if err := phase(ctx, res); err != nil {
			if ctx.Err() != nil {
				return r, fmt.Errorf("stopped: %w", context.Cause(ctx))
			}
			return r, err
		}
	}
	return r, nil
}

func (k *kubeLab) defaults() {
	var b [3]byte
	rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	k.name = k.cfg.Name + "-" + tag
	if k.k.Namespace == "" {
		k.k.Namespace = k.name
	}
	if k.k.RuntimeClass == "" {
		k.k.RuntimeClass = kubernetes.DefaultRuntimeClass
	}
	if k.k.Reach == "" {
		k.k.Reach = kubernetes.ReachPodIP
	}
	if k.k.Parallel <= 0 {
		k.k.Parallel = 10
	}
}

// open makes the namespace, the provider and the client, and describes
// the cluster in the report.
func (k *kubeLab) open(ctx context.Context, r *Report) error {
	if k.k.Template == "" {
		return errors.New("no template: name the image both the sandboxes and the bare pods run (--k8s-template)")
	}
	rc, err := kube.Config(k.k.Kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 50, 100 // as the provider's client: neither is throttled more
	if k.client, err = kube.New(rc); err != nil {
		return err
	}
	if k.p, err = kubernetes.New(kubernetes.Config{Kubeconfig: k.k.Kubeconfig, Namespace: k.k.Namespace, Name: k.name, AgentImage: k.k.AgentImage,
		RuntimeClass: k.k.RuntimeClass, Reach: k.k.Reach, StorageClass: k.k.StorageClass}); err != nil {
		return err
	}
	if r.Kubernetes.Cluster, err = k.describe(ctx); err != nil {
		return err
	}
	r.Runsc = "of RuntimeClass " + k.k.RuntimeClass
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k.k.Namespace, Labels: map[string]string{benchLabel: k.name}}}
	if _, err := k.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s exists: the run makes a namespace of its own and deletes it at the end; name a new one", k.k.Namespace)
		}
		return fmt.Errorf("making namespace %s: %w", k.k.Namespace, err)
	}
	k.madeNS = true
	k.seen = observe(k.client, k.k.Namespace)
	return k.waitServiceAccount(ctx)
}

// waitServiceAccount waits for the namespace's default service account,
// which the kubectl-run pod's token is of (a controller makes it).
func (k *kubeLab) waitServiceAccount(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := k.client.CoreV1().ServiceAccounts(k.k.Namespace).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("namespace %s has no default service account: %w", k.k.Namespace, err)
		}
	}
}

// describe is the cluster in a line: its version, nodes and runtime.
func (k *kubeLab) describe(ctx context.Context) (string, error) {
	nodes, err := k.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("the cluster's nodes: %w", err)
	}
	rc, err := k.client.NodeV1().RuntimeClasses().Get(ctx, k.k.RuntimeClass, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("RuntimeClass %s: %w", k.k.RuntimeClass, err)
	}
	s := fmt.Sprintf("%d node(s)", len(nodes.Items))
	if len(nodes.Items) > 0 {
		n := nodes.Items[0]
		s += fmt.Sprintf(", kubelet %s, %s, %s CPU", n.Status.NodeInfo.KubeletVersion, n.Status.NodeInfo.ContainerRuntimeVersion, n.Status.Allocatable.Cpu())
	}
	return s + ", RuntimeClass " + rc.Name + " (handler " + rc.Handler + ")", nil
}

// id is a new name of a pod (and its claim) in the run's namespace.
func (k *kubeLab) id(kind string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seq++
	return fmt.Sprintf("%s%04d", kind, k.seq)
}

// sbxCreate creates a sandbox through the provider and times it to its
// agent's answer; the sandbox's pod is sbx-<id>.
func (k *kubeLab) sbxCreate(ctx context.Context, id string) (time.Duration, error) {
	spec := sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: id, TemplateID: k.k.Template,
		Resources: sbx.Resources{MilliCPU: kubeMilliCPU, MemoryMB: kubeMemoryMB}, AccessToken: rand.Text() + rand.Text()}
	start := time.Now()
	k.seen.start(podOf(id), start)
	in, err := k.p.Create(ctx, spec)
	if err != nil {
		return 0, err
	}
	k.seen.mark(podOf(id), "Create returned")
	addr, err := k.p.AgentAddr(ctx, in.Handle)
	if err == nil {
		err = ready(ctx, addr, spec.AccessToken)
	}
	k.seen.mark(podOf(id), "agent ready")
	return time.Since(start), err
}

func podOf(id string) string { return "sbx-" + id }

// sbxRemove kills a sandbox.
func (k *kubeLab) sbxRemove(ctx context.Context, id string) error {
	return k.p.Kill(ctx, sbx.IDHandle(id))
}

// close deletes the namespace, with every pod and claim in it, and waits
// until it and the volumes of its claims are gone.
func (k *kubeLab) close() error {
	if k.seen != nil {
		k.seen.stop()
	}
	if !k.madeNS {
		return nil
	}
	k.cfg.progress("cleanup: removing namespace %s and everything in it", k.k.Namespace)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return deleteNamespace(ctx, k.client, k.k.Namespace)
}
