// Package kubernetes is the provider whose sandboxes are pods of a
// Kubernetes cluster, driven through client-go's REST client (package
// internal/kube) with a kubeconfig or the pod's in-cluster credentials.
//
// A sandbox is one pod named sbx-<provider ID> in the configured namespace,
// of the RuntimeClass gvisor by default, labelled with its sbx UUID, its
// provider ID, its org and project and the serve instance's name, so that
// List (and so reconcile) sees only this instance's pods and several serves
// share a namespace. Its image is the template's (pod.go): a template of
// sbx's store becomes <prefix>sbx-template/<name>:<version>, which `sbx
// template export` makes for the operator to push; any other template ID
// is an image reference as it is. Its first process is sbx's agent, which
// the pod gets from an image volume of the sbx-agent image (read-only at
// /.sbx): no init container copies it and the template's image is not
// rebuilt. The agent reads its access token from a FIFO that the provider
// writes through pods/exec (package agent, fifo.go), so the token is in no
// pod spec, environment or Secret.
//
// The sandbox's working directory is a PersistentVolumeClaim of its own.
// Kubernetes cannot freeze or checkpoint a pod, so pause is a filesystem
// stop: the pod is deleted and the claim kept, and resume boots a new pod
// on it (sbx.TokenResumer: the new agent gets the token again). Memory and
// processes are not kept; hibernate, snapshots and fork are not offered.
//
// serve reaches a sandbox's agent and ports at the pod's IP (Reach
// "pod-ip", where serve runs in the cluster or routes to its pods) or
// through the API server (Reach "apiserver"): each connection a pods/exec
// of `agent pipe PORT` behind an in-process listener (reach.go), since the
// runtime's port-forward dials the pod's network namespace, which gVisor's
// own network stack does not answer in.
package kubernetes

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/keyed"
	"github.com/sbxdev/sbx/internal/kube"
	"github.com/sbxdev/sbx/template"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// Name is the provider's name in the ledger.
const Name = "kubernetes"

// The defaults of Config.
const (
	DefaultNamespace         = "sbx-sandboxes"
	DefaultRuntimeClass      = "gvisor"
	DefaultStartTimeout      = 2 * time.Minute
	DefaultWorkSize          = "10Gi"
	DefaultCPURequestPercent = 25
)

// The reach modes: how serve gets to a sandbox's agent and ports.
const (
	ReachPodIP     = "pod-ip"
	ReachAPIServer = "apiserver"
)

// The labels of every sandbox's pod and claim.
const (
	LabelSandbox  = "sbx.dev/sandbox"  // the sbx UUID
	LabelID       = "sbx.dev/id"       // the provider sandbox ID
	LabelInstance = "sbx.dev/instance" // the serve instance's name (Config.Name)
	LabelOrg      = "sbx.dev/org"
	LabelProject  = "sbx.dev/project"
)

// Config is the cluster the provider uses and how it runs sandboxes there.
type Config struct {
	// Kubeconfig is a kubeconfig file; "": the in-cluster credentials of
	// the pod serve runs in.
	Kubeconfig string
	Namespace  string // where sandboxes' pods and claims live; default DefaultNamespace
	// Name is the serve instance's: its pods are labelled with it. Default "sbx".
	Name string
	// AgentImage is the image holding the static agent at /sbx
	// (`sbx kubernetes images`), mounted at /.sbx in every pod: /.sbx/sbx, as
	// on the local and docker providers.
	AgentImage string
	// RuntimeClass is the pods' RuntimeClass; default DefaultRuntimeClass.
	RuntimeClass string
	// Reach is ReachPodIP (default) or ReachAPIServer.
	Reach string
	// StorageClass is the class of the working directories' claims; "":
	// the cluster's default class.
	StorageClass string
	// WorkSize is the size a claim asks for when the create names no disk;
	// default DefaultWorkSize.
	WorkSize string
	// ImagePrefix goes before sbx-template/<name>:<version>, the image of a
	// template of sbx's store: the registry and path the operator pushed it to.
	ImagePrefix string
	// CPURequestPercent is the share of a sandbox's CPU limit its pod
	// requests of the scheduler (default DefaultCPURequestPercent): CPU is
	// overcommitted as on a host of the local provider; memory is requested
	// as limited, since memory cannot be taken back.
	CPURequestPercent int64
	// PriorityClass, NodeSelector and Tolerations place every sandbox's
	// pod; the cluster's scheduler picks the node.
	PriorityClass string
	NodeSelector  map[string]string
	Tolerations   []corev1.Toleration
	// Templates is sbx's template store, whose templates name their image,
	// user, working directory and start command.
	Templates template.Store
	// StartTimeout bounds how long a pod may take to run (scheduling, image
	// pull); default DefaultStartTimeout.
	StartTimeout time.Duration
}

// Provider runs sandboxes as pods of one cluster.
type Provider struct {
	cfg    Config
	client *kube.Client
	ops    keyed.Mutex // by provider ID, held by each operation on that sandbox
	addrs  sync.Map    // provider ID → its pod's IP
	tunnel *tunnels    // the in-process listeners of ReachAPIServer

	classes sync.Map // StorageClass name → whether it binds at once (bind.go)
}

// New returns the provider. It does not reach the cluster: Check says
// whether it answers.
func New(cfg Config) (*Provider, error) {
	cfg.Namespace = cmp.Or(cfg.Namespace, DefaultNamespace)
	cfg.Name = cmp.Or(cfg.Name, "sbx")
	cfg.RuntimeClass = cmp.Or(cfg.RuntimeClass, DefaultRuntimeClass)
	cfg.Reach = cmp.Or(cfg.Reach, ReachPodIP)
	cfg.WorkSize = cmp.Or(cfg.WorkSize, DefaultWorkSize)
	cfg.StartTimeout = cmp.Or(cfg.StartTimeout, DefaultStartTimeout)
	cfg.CPURequestPercent = cmp.Or(cfg.CPURequestPercent, DefaultCPURequestPercent)
	switch {
	case cfg.CPURequestPercent < 1 || cfg.CPURequestPercent > 100:
		return nil, fmt.Errorf("CPU request percent %d is not between 1 and 100", cfg.CPURequestPercent)
	case cfg.AgentImage == "":
		return nil, fmt.Errorf("no agent image: name the image `sbx kubernetes images` made (--k8s-agent-image)")
	case cfg.Reach != ReachPodIP && cfg.Reach != ReachAPIServer:
		return nil, fmt.Errorf("reach %q is neither %s nor %s", cfg.Reach, ReachPodIP, ReachAPIServer)
	case !labelValue.MatchString(cfg.Name):
		return nil, fmt.Errorf("instance name %q cannot be a label value", cfg.Name)
	}
	rc, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 50, 100
	client, err := kube.New(rc)
	if err != nil {
		return nil, err
	}
	p := &Provider{cfg: cfg, client: client}
	p.tunnel = newTunnels(p)
	return p, nil
}

// restConfig reads a kubeconfig, or the in-cluster credentials.
func restConfig(path string) (*rest.Config, error) {
	rc, err := kube.Config(path)
	switch {
	case err != nil && path != "":
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("no kubeconfig named and not in a cluster: %w", err)
	}
	return rc, nil
}

var (
	idPattern  = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,58}$`) // sbx-<id> is a DNS label
	labelValue = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]?$`)
)

// Name implements sbx.Provider.
func (p *Provider) Name() string { return Name }

// Capabilities implements sbx.Provider: pause keeps the working directory,
// not memory; nothing is checkpointed, snapshotted or forked.
func (p *Provider) Capabilities() sbx.Capabilities { return sbx.Capabilities{GPU: true} }

// Check implements sbx.Checker: the API server answers a list of the
// namespace's pods, which serve's Role allows (not a read of the namespace).
func (p *Provider) Check(ctx context.Context) error {
	if _, err := p.pods().List(ctx, listOne); err != nil {
		return fmt.Errorf("the Kubernetes API at %s: %w", p.client.Config.Host, err)
	}
	return nil
}

func (p *Provider) pods() kube.Resource[*corev1.Pod, *corev1.PodList] {
	return p.client.CoreV1().Pods(p.cfg.Namespace)
}

func (p *Provider) claims() kube.Resource[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return p.client.CoreV1().PersistentVolumeClaims(p.cfg.Namespace)
}

// podName is the name of the pod, and of the claim, of provider ID id.
func podName(id string) string { return "sbx-" + id }

func handleID(h sbx.Handle) (string, error) {
	return sbx.HandleID(h, idPattern.MatchString)
}

// begin takes id's operation lock.
func (p *Provider) begin(ctx context.Context, id string) (func(), error) {
	if err := p.ops.Lock(ctx, id); err != nil {
		return nil, err
	}
	return func() { p.ops.Unlock(id) }, nil
}
