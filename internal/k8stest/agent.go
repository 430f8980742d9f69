package k8stest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// AgentImageName is the sbx-agent image AgentImage imports: the static
// agent at /sbx, as `sbx kubernetes images` lays it out.
const AgentImageName = "sbx.test/sbx-agent:dev"

var agent struct {
	sync.Mutex
	imported bool
}

// AgentImage builds this checkout's agent, imports it into the test
// cluster as AgentImageName (Import: a cluster of scripts/k8s.sh), once per
// test binary, and answers the image's name.
func AgentImage(t testing.TB) string {
	t.Helper()
	agent.Lock()
	defer agent.Unlock()
	if !agent.imported {
		tarPath, err := packAgent(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		Import(t, tarPath)
		agent.imported = true
	}
	return AgentImageName
}

// packAgent builds the agent and packs it as AgentImageName into an image
// tarball under dir.
func packAgent(dir string) (string, error) {
	bin := filepath.Join(dir, "sbx-agent")
	build := exec.Command("go", "build", "-o", bin, "github.com/sbxdev/sbx/cmd/sbx-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building sbx-agent: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	tw.WriteHeader(&tar.Header{Name: "sbx", Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg})
	tw.Write(data)
	tw.Close()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer.Bytes())), nil })
	if err != nil {
		return "", err
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{Architecture: "amd64", OS: "linux", RootFS: v1.RootFS{Type: "layers"}})
	if err != nil {
		return "", err
	}
	if img, err = mutate.AppendLayers(img, l); err != nil {
		return "", err
	}
	tag, err := name.NewTag(AgentImageName)
	if err != nil {
		return "", err
	}
	tarPath := filepath.Join(dir, "agent.tar")
	return tarPath, tarball.WriteToFile(tarPath, tag, img)
}
