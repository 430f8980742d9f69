package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/sbxdev/sbx/kubernetes"
)

// KubernetesConfig is how serve runs the kubernetes provider.
type KubernetesConfig struct {
	Kubeconfig        string // "": the pod's in-cluster credentials
	Namespace         string // the sandboxes' namespace; default kubernetes.DefaultNamespace
	AgentImage        string // the sbx-agent image (`sbx kubernetes images`)
	RuntimeClass      string // default kubernetes.DefaultRuntimeClass
	Reach             string // pod-ip (default) or apiserver
	StorageClass      string // the working directories' claims' class; "": the cluster's default
	ImagePrefix       string // where the operator pushed the templates' images
	PriorityClass     string
	NodeSelector      map[string]string
	CPURequestPercent int64
	StartTimeout      time.Duration
}

// InCluster reports whether serve runs in a Kubernetes pod, where the
// kubernetes provider is the default.
func InCluster() bool { return os.Getenv("KUBERNETES_SERVICE_HOST") != "" }

// startKubernetes builds the kubernetes provider, named as the instance
// (--name). A cluster that does not answer yet is no error: the provider's
// Check says so, and its sandboxes are reconciled when it answers.
func startKubernetes(ctx context.Context, cfg Config, log *slog.Logger) (*kubernetes.Provider, error) {
	k := cfg.Kubernetes
	p, err := kubernetes.New(kubernetes.Config{
		Kubeconfig: k.Kubeconfig, Namespace: k.Namespace, Name: cfg.Local.Name, AgentImage: k.AgentImage, RuntimeClass: k.RuntimeClass,
		Reach: k.Reach, StorageClass: k.StorageClass, ImagePrefix: k.ImagePrefix, PriorityClass: k.PriorityClass, NodeSelector: k.NodeSelector,
		CPURequestPercent: k.CPURequestPercent, StartTimeout: k.StartTimeout, Templates: templateStore(cfg),
	})
	if err != nil {
		return nil, fmt.Errorf("--k8s-…: %w", err)
	}
	if err := p.Check(ctx); err != nil {
		log.Warn("the Kubernetes API does not answer; kubernetes sandboxes cannot run until it does", "err", err)
	} else {
		log.Info("kubernetes provider ready", "namespace", k.Namespace, "name", cfg.Local.Name, "reach", k.Reach)
	}
	return p, nil
}
