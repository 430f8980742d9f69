package k8stest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sbxdev/sbx/internal/sbximage"
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
// tarball under dir, as `sbx kubernetes images` packs it (package
// sbximage).
func packAgent(dir string) (string, error) {
	bin := filepath.Join(dir, "sbx-agent")
	build := exec.Command("go", "build", "-o", bin, "github.com/sbxdev/sbx/cmd/sbx-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building sbx-agent: %v\n%s", err, out)
	}
	tarPath := filepath.Join(dir, "agent.tar")
	return tarPath, sbximage.Save(tarPath, AgentImageName, func(layerFile string) (v1.Image, error) {
		return sbximage.Agent(bin, layerFile, sbximage.Build{Version: "dev"})
	})
}
