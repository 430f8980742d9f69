package kubernetes

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/k8stest"
	"github.com/sbxdev/sbx/providertest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMain(m *testing.M) { k8stest.Main(m) }

// agentImage is the sbx-agent image the tests import into the cluster.
const agentImage = "sbx.test/sbx-agent:dev"

var (
	imageOnce sync.Once
	imageErr  error
)

// newProvider returns a provider over the test cluster in a namespace of
// its own, removed at cleanup with everything in it.
func newProvider(t *testing.T, mod func(*Config)) *Provider {
	t.Helper()
	kubeconfig := k8stest.Cluster(t)
	imageOnce.Do(func() { imageErr = importAgent(filepath.Dir(kubeconfig)) })
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	cfg := Config{Kubeconfig: kubeconfig, Namespace: "sbxtest-" + uuid.NewString()[:8], Name: "sbxtest", AgentImage: agentImage, StartTimeout: time.Minute}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.Namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		list, _ := p.List(ctx)
		for _, in := range list {
			p.Kill(ctx, in.Handle)
		}
		p.client.CoreV1().Namespaces().Delete(ctx, cfg.Namespace, metav1.DeleteOptions{})
	})
	return p
}

// importAgent builds the agent, packs it as agentImage and imports it
// into the cluster's containerd (no registry is reachable).
func importAgent(dir string) error {
	tmp, err := os.MkdirTemp("", "sbx-k8s-agent-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "sbx-agent")
	build := exec.Command("go", "build", "-o", bin, "github.com/sbxdev/sbx/cmd/sbx-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building sbx-agent: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	tw.WriteHeader(&tar.Header{Name: "sbx-agent", Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg})
	tw.Write(data)
	tw.Close()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer.Bytes())), nil })
	if err != nil {
		return err
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{Architecture: "amd64", OS: "linux", RootFS: v1.RootFS{Type: "layers"}})
	if err != nil {
		return err
	}
	if img, err = mutate.AppendLayers(img, l); err != nil {
		return err
	}
	tag, err := name.NewTag(agentImage)
	if err != nil {
		return err
	}
	tarPath := filepath.Join(tmp, "agent.tar")
	if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
		return err
	}
	ctr := exec.Command("/var/cache/sbx-k8s/v1.37.2/bin/ctr", "--address", filepath.Join(dir, "containerd", "containerd.sock"), "-n", "k8s.io", "images", "import", tarPath)
	if out, err := ctr.CombinedOutput(); err != nil {
		return fmt.Errorf("importing the agent image: %v\n%s", err, out)
	}
	return nil
}

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Factory{
		New: func(t *testing.T) sbx.Provider { return newProvider(t, nil) },
		Reopen: func(t *testing.T, p sbx.Provider) sbx.Provider {
			q, err := New(p.(*Provider).cfg)
			if err != nil {
				t.Fatal(err)
			}
			return q
		},
		Template: k8stest.BoxImage,
		Timeout:  2 * time.Minute,
	})
}

var _ = strings.Contains
