package cli

import "github.com/spf13/cobra"

// newKubernetes is the `sbx kubernetes` command group: what deploying sbx
// on a cluster needs from this binary (docs/KUBERNETES.md).
func newKubernetes(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "kubernetes", Aliases: []string{"k8s"}, Short: "Deploy sbx on Kubernetes: the images of this sbx, for deploy/kubernetes"}
	cmd.AddCommand(newKubernetesImages(g))
	cmd.SetFlagErrorFunc(flagUsage)
	return cmd
}
