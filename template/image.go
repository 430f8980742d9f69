package template

import (
	"compress/gzip"
	"fmt"
	"os"
	"strconv"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sbxdev/sbx/internal/sbximage"
)

// ImageRepo is the repository a template is an image of:
// <ImageRepo>/<name>:<version>. The docker provider imports templates
// under it, `sbx template export` tags them so, and the kubernetes provider
// runs them so, under its image prefix.
const ImageRepo = "sbx-template"

// The labels of a template's image.
const (
	LabelName    = "dev.sbx.template"         // the template's name
	LabelVersion = "dev.sbx.template-version" // its version
	LabelStart   = "dev.sbx.template-start"   // its start command, when it has one
)

// BaseEnv is the environment of a sandbox of a template tree, which has
// none of its own (as on the local provider).
var BaseEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "TERM=xterm"}

// ImageRef is the reference of t's image under prefix (a registry and
// path ending in "/", or nothing).
func ImageRef(prefix string, t Template) string {
	return prefix + ImageRepo + "/" + t.Name + ":" + t.Version
}

// Image is t as an image of one layer, its tree (WriteTree), for Linux on
// this host's architecture (where its tree was built), configured with
// its user, working directory, ports, BaseEnv and labels naming it and its
// start command; it has no entrypoint: the agent is a sandbox's first
// process, and it starts the start command. The layer is written gzipped
// to layerFile first, once; the image reads it until it is written.
func Image(t Template, layerFile string) (v1.Image, error) {
	if err := writeLayer(t.Rootfs(), layerFile); err != nil {
		return nil, fmt.Errorf("template %s version %s: %w", t.Name, t.Version, err)
	}
	h := v1.History{Created: v1.Time{Time: t.Created}, CreatedBy: "sbx template export " + t.Name, Comment: t.Source}
	return sbximage.FromLayer(layerFile, h, imageConfig(t))
}

// imageConfig is what Image configures.
func imageConfig(t Template) v1.Config {
	c := v1.Config{User: t.User, WorkingDir: t.Workdir, Env: append([]string(nil), BaseEnv...),
		Labels: map[string]string{LabelName: t.Name, LabelVersion: t.Version}}
	if t.StartCmd != "" {
		c.Labels[LabelStart] = t.StartCmd
	}
	if len(t.Ports) > 0 {
		c.ExposedPorts = map[string]struct{}{}
		for _, p := range t.Ports {
			c.ExposedPorts[strconv.Itoa(p)+"/tcp"] = struct{}{}
		}
	}
	return c
}

// writeLayer writes the tree at root to path as a gzipped tar.
func writeLayer(root, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zw, err := gzip.NewWriterLevel(f, gzip.BestSpeed)
	if err != nil {
		return err
	}
	if err := WriteTree(zw, root); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}
