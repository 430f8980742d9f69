package e2e

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// `sbx kubernetes images` writes serve's image, holding this very sbx
// binary, and the agent's, holding the agent-only build it carries, both
// tagged with --tag-prefix and --tag.
func TestKubernetesImages(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command(sbxBin, "kubernetes", "images", "-o", dir, "--tag-prefix", "registry.example/sbx/", "--tag", "t1", "--json").Output()
	if err != nil {
		t.Fatalf("sbx kubernetes images: %v", err)
	}
	var written []struct{ Image, File string }
	if err := json.Unmarshal(out, &written); err != nil || len(written) != 2 ||
		written[0].Image != "registry.example/sbx/sbx:t1" || written[0].File != filepath.Join(dir, "sbx.tar") ||
		written[1].Image != "registry.example/sbx/sbx-agent:t1" || written[1].File != filepath.Join(dir, "sbx-agent.tar") {
		t.Fatalf("written: %s (%v)", out, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the directory holds %d entries, want the two tarballs", len(entries))
	}

	serve := imageFiles(t, written[0].File, written[0].Image)
	self, _ := os.ReadFile(sbxBin)
	if !bytes.Equal(serve["sbx"], self) {
		t.Error("serve's image's /sbx is not the sbx binary")
	}
	if len(serve["etc/ssl/certs/ca-certificates.crt"]) == 0 {
		t.Error("serve's image has no CA bundle")
	}

	agent := imageFiles(t, written[1].File, written[1].Image)["sbx"]
	if len(agent) == 0 || len(agent) >= len(self) {
		t.Fatalf("the agent's image's /sbx has %d bytes, sbx %d", len(agent), len(self))
	}
	bin := filepath.Join(t.TempDir(), "sbx-agent")
	os.WriteFile(bin, agent, 0o755)
	usage, err := exec.Command(bin).CombinedOutput()
	if !strings.Contains(string(usage), "usage: sbx-agent agent") {
		t.Errorf("the agent's /sbx run alone: %v: %s", err, usage)
	}
}

// imageFiles reads the regular files of the image ref in the tarball file.
func imageFiles(t *testing.T, file, ref string) map[string][]byte {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(file, &tag)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil || cfg.OS != "linux" || len(cfg.Config.Entrypoint) == 0 {
		t.Fatalf("%s's config: %+v, %v", ref, cfg, err)
	}
	if strings.HasSuffix(ref, "/sbx:t1") && (!slices.Equal(cfg.Config.Entrypoint, []string{"/sbx", "serve"}) || cfg.Config.User != "65532:65532") {
		t.Errorf("serve's image's config: %+v", cfg.Config)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%s: %d layers, %v", ref, len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		} else if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			files[h.Name], _ = io.ReadAll(tr)
		}
	}
}
