package cli

import (
	"context"
	"os"

	"github.com/sbxdev/sbx/bench"
	"github.com/sbxdev/sbx/kubernetes"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// kubernetesBenchFlags are the --k8s-… flags of `sbx bench lifecycle
// --provider kubernetes`: serve's, but the namespace is the run's own.
func kubernetesBenchFlags(f *pflag.FlagSet, k *bench.KubernetesConfig) {
	f.StringVar(&k.Kubeconfig, "k8s-kubeconfig", env("SBX_K8S_KUBECONFIG", os.Getenv("KUBECONFIG")), "the kubeconfig of the cluster of --provider kubernetes (default: the pod's in-cluster credentials) ($SBX_K8S_KUBECONFIG, $KUBECONFIG)")
	f.StringVar(&k.Namespace, "k8s-namespace", "", "the namespace the run makes for its pods and claims and deletes at the end; one that exists is refused (default sbxbench-<random>)")
	f.StringVar(&k.AgentImage, "k8s-agent-image", os.Getenv("SBX_K8S_AGENT_IMAGE"), "the sbx-agent image `sbx kubernetes images` made, which the sandboxes mount their agent from ($SBX_K8S_AGENT_IMAGE)")
	f.StringVar(&k.RuntimeClass, "k8s-runtime-class", env("SBX_K8S_RUNTIME_CLASS", kubernetes.DefaultRuntimeClass), "the RuntimeClass of the sandboxes' and the bare pods' ($SBX_K8S_RUNTIME_CLASS)")
	f.StringVar(&k.StorageClass, "k8s-storage-class", os.Getenv("SBX_K8S_STORAGE_CLASS"), "the StorageClass of the sandboxes' and the second baseline's claims (default: the cluster's default class) ($SBX_K8S_STORAGE_CLASS)")
	f.StringVar(&k.Reach, "k8s-reach", env("SBX_K8S_REACH", kubernetes.ReachPodIP), "how the run reaches the sandboxes' agents: pod-ip (this host routes to pods) or apiserver (through pods/exec) ($SBX_K8S_REACH)")
	f.StringVar(&k.Template, "k8s-template", "", "the image reference the sandboxes (as their template) and the bare pods run")
	f.IntVar(&k.Parallel, "k8s-parallel", 10, "creates at once in the parallel part")
}

// runKubernetesBench is `sbx bench lifecycle --provider kubernetes`: the
// kubernetes provider alone, against bare pods; no runsc, template store
// or root is needed here.
func (g *globals) runKubernetesBench(cmd *cobra.Command, cfg bench.Config, markdown bool) error {
	switch {
	case cfg.Kubernetes.Template == "":
		return usagef("--provider kubernetes needs --k8s-template, the image reference the sandboxes and the bare pods run")
	case cfg.Kubernetes.AgentImage == "":
		return usagef("--provider kubernetes needs --k8s-agent-image, the sbx-agent image `sbx kubernetes images` made")
	case cfg.Kubernetes.Parallel <= 0:
		return usagef("--k8s-parallel must be a positive count, not %d", cfg.Kubernetes.Parallel)
	}
	cfg.Progress = g.opts.Stderr
	return g.runBench(cmd, markdown, func(ctx context.Context) (*bench.Report, error) { return bench.Kubernetes(ctx, cfg) })
}
