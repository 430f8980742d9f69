package template

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sbxdev/sbx"
)

// OCIOptions say where and how to pull an image template.
type OCIOptions struct {
	Username, Password string      // registry credentials; else the Docker config's, else anonymous
	Insecure           bool        // allow plain HTTP registries
	StartCmd           string      // started by the agent at each sandbox's boot; default none, never the image's CMD
	User               string      // the default user of its sandboxes; default the image's configured User (none: root)
	Egress             *sbx.Egress // the default egress policy of its sandboxes; default none (the server's)
	Ports              []int       // the ports its sandboxes serve; default none
	// Remote, when set, is how the registry is reached (credentials,
	// transport) in place of Username and Password or the host's Docker
	// config: a tenant's pull (package oci) never uses the host's.
	Remote []remote.Option
	// MaxBytes, when set, refuses an image whose layers, as the registry
	// stores them (compressed), add up to more, or whose flattened tree
	// is more than unpackedPerCompressed times that.
	MaxBytes int64
}

// BuildOCI builds a new version of template name from an OCI image: it pulls
// the image for linux/amd64 (or the host's architecture) with
// go-containerregistry, flattens its layers and unpacks them, confined to the
// new root, with /workspace added. The image's entrypoint and CMD are not
// used: the template's start command is opts.StartCmd, or none.
func (s Store) BuildOCI(ctx context.Context, tmplName, image string, opts OCIOptions, progress io.Writer) (Template, error) {
	if err := CheckName(tmplName); err != nil {
		return Template{}, err
	}
	if err := CheckStartCmd(opts.StartCmd); err != nil {
		return Template{}, err
	}
	if err := CheckUser(opts.User); err != nil {
		return Template{}, err
	}
	if err := CheckPorts(opts.Ports); err != nil {
		return Template{}, err
	}
	egress, err := CheckEgress(opts.Egress)
	if err != nil {
		return Template{}, err
	}
	var nameOpts []name.Option
	if opts.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	ref, err := name.ParseReference(image, nameOpts...)
	if err != nil {
		return Template{}, fmt.Errorf("image %q: %w", image, err)
	}
	reach := opts.Remote
	switch {
	case reach != nil:
	case opts.Username != "":
		reach = []remote.Option{remote.WithAuth(&authn.Basic{Username: opts.Username, Password: opts.Password}), remote.WithContext(ctx)}
	default:
		reach = []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithContext(ctx)}
	}
	fmt.Fprintf(progress, "pulling %s\n", ref)
	img, err := remote.Image(ref, append(reach, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: hostArch()}))...)
	if err != nil {
		return Template{}, fmt.Errorf("pulling %s: %w", ref, err)
	}
	if err := checkSize(img, opts.MaxBytes); err != nil {
		return Template{}, fmt.Errorf("pulling %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return Template{}, fmt.Errorf("pulling %s: %w", ref, err)
	}
	user := opts.User
	if user == "" {
		cfg, err := img.ConfigFile()
		if err != nil {
			return Template{}, fmt.Errorf("pulling %s: %w", ref, err)
		}
		if user = cfg.Config.User; CheckUser(user) != nil {
			return Template{}, fmt.Errorf("the image's user %q is not one sbx runs commands as (a name or UID, with an optional :GROUP); name one with --user", user)
		}
	}
	now := time.Now().UTC()
	t := Template{Name: tmplName, Version: now.Format("20060102T150405.000000Z"), Created: now,
		Source: fmt.Sprintf("oci %s@%s", ref.Context(), digest), StartCmd: opts.StartCmd, User: user, Egress: egress, Ports: opts.Ports}
	if t.User == "root" || t.User == "0" {
		t.User = ""
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, tmplName), 0o755); err != nil {
		return t, err
	}
	building, err := os.MkdirTemp(filepath.Join(s.Dir, tmplName), ".building-")
	if err != nil {
		return t, err
	}
	defer os.RemoveAll(building)
	rootfs := filepath.Join(building, "rootfs")
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		return t, err
	}
	flat := mutate.Extract(img)
	defer flat.Close()
	var tree io.Reader = flat
	if opts.MaxBytes > 0 {
		tree = &capped{r: flat, left: unpackedPerCompressed * opts.MaxBytes}
	}
	n, err := unpack(tree, rootfs)
	if err != nil {
		return t, fmt.Errorf("unpacking %s: %w", ref, err)
	}
	fmt.Fprintf(progress, "unpacked %d entries of %s\n", n, digest)
	if err := finishRoot(rootfs); err != nil {
		return t, err
	}
	if err := checkUserIn(rootfs, t.User); err != nil {
		return t, err
	}
	if t, err = s.publish(t, building); err == nil {
		fmt.Fprintf(progress, "template %s version %s is ready\n", tmplName, t.Version)
	}
	return t, err
}

// checkSize refuses an image whose layers add up to more than max bytes
// (none: no limit).
func checkSize(img v1.Image, max int64) error {
	if max <= 0 {
		return nil
	}
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	var sum int64
	for _, l := range m.Layers {
		if l.Size <= 0 {
			return fmt.Errorf("its layer %s declares no size", l.Digest)
		}
		sum += l.Size
	}
	if sum > max {
		return fmt.Errorf("its layers are %d MiB, more than the %d MiB an image may be here", sum>>20, max>>20)
	}
	return nil
}

// unpackedPerCompressed bounds how much larger than MaxBytes an image's
// flattened tree may be: a compression ratio no real image reaches, and
// that no gzip bomb gets past.
const unpackedPerCompressed = 8

// capped is a reader that fails once it has given more than left bytes.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.left -= int64(n); c.left < 0 {
		return n, errors.New("its unpacked tree is larger than an image may be here")
	}
	return n, err
}

// unpack writes a tar stream into dir through an os.Root, so that no entry,
// and no symlink an earlier entry made, can reach outside dir. Hard links are
// made last: a flattened image lists its top layer first, so a link can come
// before the file it names.
func unpack(r io.Reader, dir string) (int, error) { return unpackTar(r, dir, false) }

// unpackTar is unpack; with overlay, the tar is an overlay filesystem's
// upper layer as runsc writes it (`runsc tar rootfs-upper`) laid over what
// dir holds: a character device 0:0, or a hard link to one, is a deletion
// (a whiteout), and a directory marked opaque (the xattr
// trusted.overlay.opaque) replaces what dir held there. Files are replaced,
// never written in place: dir's may be hard links to a template's.
func unpackTar(r io.Reader, dir string, overlay bool) (int, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	asRoot := os.Geteuid() == 0
	tr := tar.NewReader(r)
	n := 0
	var links [][2]string // target, name
	whiteouts := map[string]bool{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			for _, l := range links {
				root.Remove(l[1])
				if err := root.Link(l[0], l[1]); err != nil {
					return n, err
				}
				n++
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
		p := path.Clean(strings.TrimPrefix(h.Name, "/"))
		if p == "." {
			continue
		}
		if strings.HasPrefix(p, "../") || p == ".." {
			return n, fmt.Errorf("entry %q leaves the root", h.Name)
		}
		if dir := path.Dir(p); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return n, err
			}
		}
		if overlay {
			target := path.Clean(strings.TrimPrefix(h.Linkname, "/"))
			switch {
			case h.Typeflag == tar.TypeChar && h.Devmajor == 0 && h.Devminor == 0, h.Typeflag == tar.TypeLink && whiteouts[target]:
				whiteouts[p] = true
				if err := root.RemoveAll(p); err != nil {
					return n, err
				}
				continue
			case h.Typeflag == tar.TypeDir && h.PAXRecords["SCHILY.xattr.trusted.overlay.opaque"] == "y":
				if err := root.RemoveAll(p); err != nil {
					return n, err
				}
			case h.Typeflag == tar.TypeDir:
				if fi, err := root.Lstat(p); err == nil && !fi.IsDir() {
					root.Remove(p) // a file the layer made a directory
				}
			}
		}
		mode := h.FileInfo().Mode().Perm() | h.FileInfo().Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return n, err
			}
		case tar.TypeReg:
			root.Remove(p)
			f, err := root.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
			if err != nil {
				return n, err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return n, err
			}
		case tar.TypeSymlink:
			root.Remove(p)
			if err := root.Symlink(h.Linkname, p); err != nil {
				return n, err
			}
		case tar.TypeLink:
			links = append(links, [2]string{path.Clean(strings.TrimPrefix(h.Linkname, "/")), p})
			continue
		default:
			continue // devices, fifos: sandboxes get their own /dev
		}
		n++
		if h.Typeflag == tar.TypeSymlink {
			if asRoot {
				root.Lchown(p, h.Uid, h.Gid)
			}
			continue
		}
		if asRoot {
			if err := root.Lchown(p, h.Uid, h.Gid); err != nil {
				return n, err
			}
		}
		if err := root.Chmod(p, mode); err != nil {
			return n, err
		}
	}
}

// hostArch is the OCI name of this machine's architecture (Go's names match).
func hostArch() string { return runtime.GOARCH }
