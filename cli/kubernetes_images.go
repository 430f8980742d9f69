package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sbxdev/sbx/internal/agentbin"
	"github.com/sbxdev/sbx/internal/sbximage"
	"github.com/sbxdev/sbx/internal/version"
	"github.com/spf13/cobra"
)

// newKubernetesImages is `sbx kubernetes images -o DIR`: serve's image
// and the agent's, made of this very binary, as docker-archive tarballs.
func newKubernetesImages(g *globals) *cobra.Command {
	var dir, prefix, tag, caCerts string
	cmd := &cobra.Command{
		Use:   "images -o DIR",
		Short: "Write the images sbx runs from on Kubernetes, made of this binary: DIR/sbx.tar and DIR/sbx-agent.tar",
		Long: "sbx.tar is serve's image, FROM scratch: this sbx binary at /sbx, the CA bundle (--ca-certs) and the\n" +
			"entrypoint `/sbx serve`, as user 65532. sbx-agent.tar holds the agent binary this sbx carries at /sbx\n" +
			"(/.sbx/sbx in a sandbox), the image --k8s-agent-image names. Both are tagged <--tag-prefix>NAME:<--tag> (by default\n" +
			"this sbx's version); load them with docker load or ctr images import, or push them with crane push or\n" +
			"skopeo copy.",
		Example: "  sbx kubernetes images -o images --tag-prefix registry.example.com/sbx/ --tag v1\n" +
			"  crane push images/sbx.tar registry.example.com/sbx/sbx:v1 && crane push images/sbx-agent.tar registry.example.com/sbx/sbx-agent:v1",
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return usagef("%s needs -o DIR\nusage: %s", cmd.CommandPath(), cmd.UseLine())
			}
			v := version.Get()
			if tag == "" {
				tag = version.Tag(v.Version)
			}
			build := sbximage.Build{Version: v.Version, Revision: v.Revision}
			serveRef, agentRef := prefix+sbximage.ServeRepo+":"+tag, prefix+sbximage.AgentRepo+":"+tag
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding this sbx binary: %w", err)
			}
			agent, err := agentBinary(dir, self, g.opts.Stderr)
			if err != nil {
				return err
			}
			defer os.Remove(agent)
			images := []struct {
				ref, file string
				mk        func(layer string) (v1.Image, error)
			}{
				{serveRef, "sbx.tar", func(layer string) (v1.Image, error) { return sbximage.Serve(self, caCerts, layer, build) }},
				{agentRef, "sbx-agent.tar", func(layer string) (v1.Image, error) { return sbximage.Agent(agent, layer, build) }},
			}
			var out []exported
			for _, im := range images {
				file := filepath.Join(dir, im.file)
				if err := sbximage.Save(file, im.ref, im.mk); err != nil {
					return err
				}
				out = append(out, exported{Image: im.ref, File: file})
			}
			return g.show(out, func(w io.Writer) error {
				for _, e := range out {
					if _, err := fmt.Fprintf(w, "%s: %s\n", e.File, e.Image); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&dir, "output", "o", "", "the directory to write sbx.tar and sbx-agent.tar in")
	f.StringVar(&prefix, "tag-prefix", "", "what the images' names start with: a registry and path ending in /, e.g. registry.example.com/sbx/")
	f.StringVar(&tag, "tag", "", "the images' tag (default: this sbx's version, \"devel\" for a build without one)")
	f.StringVar(&caCerts, "ca-certs", sbximage.CACerts, "the CA bundle serve's image trusts (registries, webhooks, remote providers)")
	return cmd
}

// agentBinary writes the agent-only build this sbx carries (package
// agentbin) to a file in dir and answers its path; a build that carries
// none (a plain go build) runs sbx itself as its sandboxes' agent, so its
// image holds a copy of self.
func agentBinary(dir, self string, stderr io.Writer) (string, error) {
	r, ok, err := agentbin.Open()
	if err != nil {
		return "", fmt.Errorf("the agent this sbx carries: %w", err)
	}
	if !ok {
		fmt.Fprintln(stderr, "sbx: this sbx carries no agent-only build (a plain go build, not scripts/lib.sh's build_sbx): the agent's image holds sbx itself")
		src, err := os.Open(self)
		if err != nil {
			return "", err
		}
		defer src.Close()
		r = src
	}
	f, err := os.CreateTemp(dir, ".sbx-agent-*")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
