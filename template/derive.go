package template

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sbxdev/sbx"
)

// Derive makes a new version of the template name from the current version
// of template from: the same root tree, hard-linked (templates are never
// changed, so they can share their files), and its default user and egress
// policy, with its own start command. It is how a start command is put on a
// built template without building it again.
func (s Store) Derive(name, from, startCmd string) (Template, error) {
	return s.DeriveWith(name, from, DeriveOptions{StartCmd: startCmd})
}

// DeriveOptions say what a derived template has of its own.
type DeriveOptions struct {
	StartCmd string      // its start command; default none
	Egress   *sbx.Egress // its sandboxes' default egress policy; default the source's
	Ports    []int       // the ports its sandboxes serve; default the source's
}

// DeriveWith is Derive with a default egress policy of its own too.
func (s Store) DeriveWith(name, from string, opts DeriveOptions) (Template, error) {
	if err := CheckName(name); err != nil {
		return Template{}, err
	}
	if err := CheckStartCmd(opts.StartCmd); err != nil {
		return Template{}, err
	}
	egress, err := CheckEgress(opts.Egress)
	if err != nil {
		return Template{}, err
	}
	if err := CheckPorts(opts.Ports); err != nil {
		return Template{}, err
	}
	src, err := s.Current(from)
	if err != nil {
		return Template{}, err
	}
	if egress == nil {
		egress = src.Egress
	}
	ports := opts.Ports
	if ports == nil {
		ports = src.Ports
	}
	now := time.Now().UTC()
	t := Template{Name: name, Version: now.Format("20060102T150405.000000Z"), Created: now, Packages: src.Packages,
		Source: fmt.Sprintf("template %s version %s (%s)", src.Name, src.Version, src.Source), StartCmd: opts.StartCmd,
		User: src.User, Recipe: src.Recipe, Egress: egress, Ports: ports}
	if err := os.MkdirAll(filepath.Join(s.Dir, name), 0o755); err != nil {
		return t, err
	}
	building, err := os.MkdirTemp(filepath.Join(s.Dir, name), ".building-")
	if err != nil {
		return t, err
	}
	defer os.RemoveAll(building) // gone once published
	if err := LinkTree(src.Rootfs(), filepath.Join(building, "rootfs")); err != nil {
		return t, fmt.Errorf("deriving %s from %s: %w", name, from, err)
	}
	return s.publish(t, building)
}

// LinkTree recreates the directories of the tree at src under dst, with
// their modes and owners, and hard-links everything else (files, symlinks,
// device nodes) into them.
func LinkTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if !d.IsDir() {
			return os.Link(path, target)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if err := os.Mkdir(target, 0o700); err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if err := os.Lchown(target, int(st.Uid), int(st.Gid)); err != nil {
				return err
			}
		}
		return os.Chmod(target, fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
	})
}

// Layered makes, at dst, the root tree of t with a sandbox's upper layer
// laid over it (a tar as `runsc tar rootfs-upper` writes it): a tree of
// t's hard-linked files, where what the layer changed is a file of its
// own. It is immutable like a template's, and outlives t's version.
func Layered(t Template, dst string, upper io.Reader) error {
	if err := LinkTree(t.Rootfs(), dst); err != nil {
		return err
	}
	_, err := unpackTar(upper, dst, true)
	return err
}

// PublishLayered makes a new version of the template t.Name (made if new)
// whose root tree is base's with upper laid over it (Layered: a sandbox's
// writable layer, as `runsc tar rootfs-upper` writes it); t says the rest
// (source, start command, user, workdir, ports). Its version and time are
// set here.
func (s Store) PublishLayered(t Template, base Template, upper io.Reader) (Template, error) {
	if err := CheckName(t.Name); err != nil {
		return t, err
	}
	now := time.Now().UTC()
	t.Version, t.Created = now.Format("20060102T150405.000000Z"), now
	if err := os.MkdirAll(filepath.Join(s.Dir, t.Name), 0o755); err != nil {
		return t, err
	}
	building, err := os.MkdirTemp(filepath.Join(s.Dir, t.Name), ".building-")
	if err != nil {
		return t, err
	}
	defer os.RemoveAll(building) // gone once published
	if err := Layered(base, filepath.Join(building, "rootfs"), upper); err != nil {
		return t, fmt.Errorf("laying the build's files over %s version %s: %w", base.Name, base.Version, err)
	}
	return s.publish(t, building)
}
