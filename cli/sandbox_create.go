package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxCreate is `sbx sandbox create TEMPLATE`.
func newSandboxCreate(g *globals) *cobra.Command {
	var o client.CreateOptions
	var access, host string
	var noWake bool
	var egress egressFlags
	var image apiv1.Image
	cmd := &cobra.Command{
		Use:   "create [TEMPLATE]",
		Short: "Create a sandbox from a template (or an OCI image, or a snapshot) and print it, its ID first",
		Example: "  sbx sandbox create base --timeout 30m --wait --env FOO=bar --metadata purpose=demo\n" +
			"  sbx sandbox create base --cpu 4 --memory-mb 8192 --disk-mb 20480 --gpu h100:1:50\n" +
			"  sbx sandbox create base --egress none\n" +
			"  sbx sandbox create base --egress-allow pypi.org,files.pythonhosted.org --egress-allow 203.0.113.0/24\n" +
			"  SBX_REGISTRY_PASSWORD=… sbx sandbox create --image ghcr.io/me/app:v2 --registry-username me\n" +
			"  sbx sandbox create --snapshot 0b6c…-… --env FOO=mine",
		Args: argsOptional("TEMPLATE"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			template := ""
			given := 0
			for _, set := range []bool{len(args) == 1, image.URI != "", o.SnapshotID != ""} {
				if set {
					given++
				}
			}
			switch {
			case given > 1:
				return usagef("give one of a TEMPLATE, --image and --snapshot")
			case len(args) == 1:
				template = args[0]
			case o.SnapshotID != "":
			case image.URI == "":
				return usagef("give a TEMPLATE (base, say), --image or --snapshot")
			default:
				image.Password = os.Getenv("SBX_REGISTRY_PASSWORD")
				o.Image = &image
			}
			if access != "" || host != "" || noWake {
				o.Preview = &apiv1.Preview{Access: access, Host: host}
				if noWake {
					o.Preview.Wake = new(bool)
				}
			}
			o.Egress = egress.policy()
			sb, err := c.Create(ctx, template, &o)
			if err != nil {
				return err
			}
			data := sb.Data()
			return g.show(&data, func(w io.Writer) error {
				fmt.Fprintln(w, data.SandboxID)
				return sandboxDetail(w, &data)
			})
		}),
	}
	f := cmd.Flags()
	f.Var(durationValue{&o.Timeout}, "timeout", "lifetime, in seconds or as 1h, before the sandbox is killed (paused with --auto-pause) (default: the server's, 1h)")
	f.BoolVar(&o.WaitReady, "wait", false, "answer only once the sandbox runs")
	f.Var(pairsValue{&o.EnvVars}, "env", "environment variable of the sandbox (repeatable)")
	f.Var(pairsValue{&o.Metadata}, "metadata", "metadata to find the sandbox by (repeatable)")
	f.BoolVar(&o.AutoPause, "auto-pause", false, "pause instead of kill on timeout")
	f.Float64Var(&o.CPU, "cpu", 0, "vCPUs (default: the server's)")
	f.Int64Var(&o.MemoryMB, "memory-mb", 0, "memory in MB (default: the server's)")
	f.Int64Var(&o.DiskMB, "disk-mb", 0, "cap of the sandbox's writable layer in MB, held on the host's disk until it is deleted (default: the server's)")
	f.Var(gpuValue{&o.GPU}, "gpu", "GPUs: type, count (default 1), percent of one card (25, 50, 75 or 100)")
	f.StringVar(&o.Kind, "kind", "", "task (default), runtime or world")
	f.StringVar(&access, "preview", "", "who reaches its preview URLs: private (default: the traffic token, a link or an API key) or public")
	f.StringVar(&host, "preview-host", "", "the Host the app sees: preview (default) or localhost")
	f.BoolVar(&noWake, "no-wake", false, "preview traffic leaves the sandbox paused (409) instead of waking it")
	f.IntSliceVar(&o.Ports, "port", nil, "a port it serves, listed with its preview URL (repeatable)")
	egress.add(f, "the sandbox", "the template's default, else the server's")
	f.StringVar(&o.ProjectID, "project", "", "the ID of the project the sandbox belongs to, one the key reaches (default: the key's)")
	f.StringVar(&image.URI, "image", "", "start from this OCI image (REGISTRY/REPOSITORY[:TAG] or @sha256:DIGEST) in place of a template, pulled and kept by the server")
	f.StringVar(&image.Username, "registry-username", "", "with --image: the registry's username; its password or token is read from $SBX_REGISTRY_PASSWORD, never a flag")
	f.StringVar(&o.WarmPool, "warm-pool", "", "how to use the template's warm pool: prefer (default), require or bypass")
	f.StringVar(&o.Provider, "provider", "", "the provider it runs on, one of the server's (sbx summary lists them); default the server's")
	f.Var(volumesValue{&o.Volumes}, "volume", "mount a volume of the project: NAME:PATH, or NAME:PATH:ro read-only (repeatable)")
	f.StringVar(&o.SnapshotID, "snapshot", "", "start from this snapshot (its ID) in place of a template: the sandbox goes on from its memory, processes and files, with the snapshot's size")
	return cmd
}
