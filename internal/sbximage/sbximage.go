// Package sbximage makes the images sbx is deployed from on Kubernetes
// (docs/KUBERNETES.md), from the binaries themselves and without a
// container engine: serve's (FROM scratch: the sbx binary at /sbx, the
// host's CA bundle, entrypoint `/sbx serve`) and the agent's (the agent
// binary alone at /sbx, which the kubernetes provider mounts into every
// sandbox pod as an image volume at /.sbx: /.sbx/sbx, as on the local and
// docker providers). Write saves an image as a
// docker-archive tarball, which `docker load` and `ctr images import`
// take and `crane push` or `skopeo copy` push to a registry.
package sbximage

import (
	"archive/tar"
	"compress/gzip"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Where the images keep what they hold, and their repositories.
const (
	ServeRepo   = "sbx"
	AgentRepo   = "sbx-agent"
	ServeBinary = "/sbx"
	AgentBinary = "/sbx"
	CACerts     = "/etc/ssl/certs/ca-certificates.crt"
	// User is whom serve's image runs as: serve on Kubernetes needs no
	// root (65532, distroless's "nonroot").
	User = "65532:65532"
)

// Build is what the images are labelled with.
type Build struct {
	Version  string    // the sbx version
	Revision string    // the VCS revision, when known
	Created  time.Time // the image's creation time; zero: the epoch, for a reproducible image
}

// Serve is serve's image: the binary at binary as /sbx, the CA bundle at
// caCerts as /etc/ssl/certs/ca-certificates.crt, run as User with
// entrypoint `/sbx serve`. Its layer is written to layerFile, which the
// image reads until it is written.
func Serve(binary, caCerts, layerFile string, b Build) (v1.Image, error) {
	if err := CheckStatic(binary); err != nil {
		return nil, err
	}
	files := []file{
		{name: ServeBinary, src: binary, mode: 0o755},
		{name: CACerts, src: caCerts, mode: 0o644},
	}
	return image(files, layerFile, b, v1.Config{
		Entrypoint: []string{ServeBinary, "serve"},
		User:       User,
		Env:        []string{"PATH=/"},
		Labels:     labels(b, "sbx serve: the control plane of sbx"),
	})
}

// Agent is the agent's image: the binary at binary as /sbx, mode 0755,
// nothing else; a sandbox pod mounts it at /.sbx and runs `/.sbx/sbx agent
// …`, so its entrypoint is `/sbx agent`.
func Agent(binary, layerFile string, b Build) (v1.Image, error) {
	if err := CheckStatic(binary); err != nil {
		return nil, err
	}
	return image([]file{{name: AgentBinary, src: binary, mode: 0o755}}, layerFile, b, v1.Config{
		Entrypoint: []string{AgentBinary, "agent"},
		Labels:     labels(b, "the sbx agent, which runs inside every sandbox"),
	})
}

func labels(b Build, title string) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":   title,
		"org.opencontainers.image.version": b.Version,
		"org.opencontainers.image.source":  "https://github.com/sbxdev/sbx",
	}
	if b.Revision != "" {
		l["org.opencontainers.image.revision"] = b.Revision
	}
	return l
}

// CheckStatic refuses a binary that is not a statically linked ELF
// executable for this architecture: an image FROM scratch has no dynamic
// loader or libraries.
func CheckStatic(binary string) error {
	f, err := elf.Open(binary)
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable: %w", binary, err)
	}
	defer f.Close()
	if want := elfMachine[runtime.GOARCH]; want != 0 && f.Machine != want {
		return fmt.Errorf("%s is built for %v, not this host's %s", binary, f.Machine, runtime.GOARCH)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; an image FROM scratch needs a static build (CGO_ENABLED=0, as scripts/lib.sh's build_sbx)", binary)
		}
	}
	return nil
}

var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// file is one file of an image's layer, read from src.
type file struct {
	name string
	src  string
	mode int64
}

// image is an image of one layer holding files (and their parent
// directories), configured with c.
func image(files []file, layerFile string, b Build, c v1.Config) (v1.Image, error) {
	if b.Created.IsZero() {
		b.Created = time.Unix(0, 0).UTC()
	}
	if err := writeLayer(files, layerFile, b.Created); err != nil {
		return nil, err
	}
	return FromLayer(layerFile, v1.History{Created: v1.Time{Time: b.Created}, CreatedBy: "sbx kubernetes images"}, c)
}

// FromLayer is the image of the one gzipped tar layer at layerFile, for
// linux on this host's architecture, made as h says and configured with c.
func FromLayer(layerFile string, h v1.History, c v1.Config) (v1.Image, error) {
	layer, err := tarball.LayerFromFile(layerFile)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer, History: h})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created, cfg.Config = "linux", runtime.GOARCH, h.Created, c
	return mutate.ConfigFile(img, cfg)
}

// writeLayer writes files, their parent directories first, as a gzipped
// tar to path, every entry owned by root and dated mtime.
func writeLayer(files []file, path string, mtime time.Time) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	zw, err := gzip.NewWriterLevel(out, gzip.BestSpeed)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{}
	for _, f := range files {
		for _, d := range parents(f.name) {
			if !dirs[d] {
				dirs[d] = true
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
					return err
				}
			}
		}
		if err := addFile(tw, f, mtime); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return out.Close()
}

// parents are the directories above name, outermost first, without the
// leading "/": parents("/etc/ssl/x") is etc, etc/ssl.
func parents(name string) []string {
	var out []string
	for d := path.Dir(name); d != "/" && d != "."; d = path.Dir(d) {
		out = append([]string{strings.TrimPrefix(d, "/")}, out...)
	}
	return out
}

// addFile adds f's regular file to tw.
func addFile(tw *tar.Writer, f file, mtime time.Time) error {
	src, err := os.Open(f.src)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", f.src)
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.name, "/"), Mode: f.mode, Size: st.Size(), ModTime: mtime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, src, st.Size()); err != nil {
		return fmt.Errorf("%s: %w", f.src, err)
	}
	return nil
}

// CheckRef refuses what cannot tag an image (Write's ref), before an
// image is made for it.
func CheckRef(ref string) error {
	_, err := tag(ref)
	return err
}

func tag(ref string) (name.Tag, error) {
	t, err := name.NewTag(ref)
	if err != nil {
		return t, fmt.Errorf("image reference %q: %w", ref, err)
	}
	return t, nil
}

// Save makes an image with mk, whose layer file is a temporary file beside
// file, and writes it to file with Write; the layer file is removed.
func Save(file, ref string, mk func(layerFile string) (v1.Image, error)) error {
	if err := CheckRef(ref); err != nil {
		return err
	}
	layer, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".layer-*")
	if err != nil {
		return err
	}
	layer.Close()
	defer os.Remove(layer.Name())
	img, err := mk(layer.Name())
	if err != nil {
		return err
	}
	return Write(file, ref, img)
}

// Write saves img as a docker-archive tarball at file, tagged ref: written
// beside it and renamed into place, so that file is whole or absent;
// mode 0644.
func Write(file, ref string, img v1.Image) error {
	tag, err := tag(ref)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	err = tarball.Write(tag, img, tmp)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(fmt.Errorf("writing %s", file), err)
	}
	return os.Rename(tmp.Name(), file)
}
