// Package testregistry runs a real OCI registry (go-containerregistry's) in
// a test, behind basic authentication, and pushes images made of files of
// the test's choosing to it.
package testregistry

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The credentials the registry wants.
const (
	User     = "puller"
	Password = "registry-secret-6f1c"
)

// Registry is a running registry.
type Registry struct {
	Host string // host:port, on loopback, plain HTTP
}

// Serve starts a registry that ends with t and answers only requests with
// User and Password.
func Serve(t testing.TB) *Registry { return serve(t, true) }

// ServeOpen starts a registry that ends with t and answers anyone; Push
// and PushIndex to it send the credentials all the same.
func ServeOpen(t testing.TB) *Registry { return serve(t, false) }

func serve(t testing.TB, auth bool) *Registry {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); auth && (!ok || u != User || p != Password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="testregistry"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &Registry{Host: strings.TrimPrefix(srv.URL, "http://")}
}

// Push pushes an image of these layers for this host's platform, with cfg
// as its configuration, as repo:tag, and answers its reference.
func (r *Registry) Push(t testing.TB, repo, tag string, cfg v1.Config, layers ...v1.Layer) string {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err == nil {
		img, err = mutate.ConfigFile(img, &v1.ConfigFile{OS: "linux", Architecture: runtime.GOARCH, Config: cfg})
	}
	if err != nil {
		t.Fatal(err)
	}
	ref := r.Host + "/" + repo + ":" + tag
	parsed, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(parsed, img, remote.WithAuth(&authn.Basic{Username: User, Password: Password})); err != nil {
		t.Fatal(err)
	}
	return ref
}

// PushIndex pushes a multi-platform index as repo:tag: an image of these
// layers for this host's platform, with cfg as its configuration, beside
// one for another architecture that holds other, which a pull for this
// host must not take. It answers the index's reference.
func (r *Registry) PushIndex(t testing.TB, repo, tag string, cfg v1.Config, other v1.Layer, layers ...v1.Layer) string {
	t.Helper()
	otherArch := "arm64"
	if runtime.GOARCH == otherArch {
		otherArch = "amd64"
	}
	var idx v1.ImageIndex = empty.Index
	for _, p := range []struct {
		arch   string
		layers []v1.Layer
	}{{runtime.GOARCH, layers}, {otherArch, []v1.Layer{other}}} {
		img, err := mutate.AppendLayers(empty.Image, p.layers...)
		if err == nil {
			img, err = mutate.ConfigFile(img, &v1.ConfigFile{OS: "linux", Architecture: p.arch, Config: cfg})
		}
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: p.arch}}})
	}
	ref := r.Host + "/" + repo + ":" + tag
	parsed, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(parsed, idx, remote.WithAuth(&authn.Basic{Username: User, Password: Password})); err != nil {
		t.Fatal(err)
	}
	return ref
}

// Layer is a layer of the tar stream data.
func Layer(t testing.TB, data []byte) v1.Layer {
	t.Helper()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TreeLayer is a layer holding the entries of root named by paths, each
// with its parent directories, a symlink as a symlink.
func TreeLayer(t testing.TB, root string, paths ...string) v1.Layer {
	t.Helper()
	data, err := tarOf(root, paths)
	if err != nil {
		t.Fatal(err)
	}
	return Layer(t, data)
}

// tarOf writes the entries of root that paths name, parents first, into a
// tar stream.
func tarOf(root string, paths []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	done := map[string]bool{}
	var add func(p string) error
	add = func(p string) error {
		if p == "." || p == "/" || done[p] {
			return nil
		}
		if err := add(path.Dir(p)); err != nil {
			return err
		}
		done[p] = true
		full := filepath.Join(root, p)
		fi, err := os.Lstat(full)
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(full); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = p
		if fi.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(full)
			if err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		}
		return nil
	}
	for _, p := range paths {
		if err := add(strings.TrimPrefix(path.Clean(p), "/")); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
