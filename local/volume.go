package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sbxdev/sbx"
	"golang.org/x/sys/unix"
)

// Volumes live in <DataDir>/volumes: <id>.img, an ext4 filesystem in a
// file of the volume's size, loop-mounted at <id>/ (so its cap holds: a
// write past it is ENOSPC inside the sandbox), whose data/ directory is
// what sandboxes mount and serve reads and writes. The image outlives
// serve; New mounts the images a reboot unmounted.

func (l layout) volumesDir() string { return filepath.Join(l.dataDir, "volumes") }

func (l layout) volumeImage(id string) string { return filepath.Join(l.volumesDir(), id+".img") }

func (l layout) volumeMount(id string) string { return filepath.Join(l.volumesDir(), id) }

func (l layout) volumeData(id string) string { return filepath.Join(l.volumeMount(id), "data") }

// CreateVolume implements sbx.VolumeProvider.
func (p *Provider) CreateVolume(ctx context.Context, id string, sizeMB int64) (err error) {
	defer func() { err = p.hide(err) }()
	if !idPattern.MatchString(id) {
		return fmt.Errorf("volume ID %q is not one the local provider accepts", id)
	}
	if err := os.MkdirAll(p.volumesDir(), 0o700); err != nil {
		return err
	}
	img := p.volumeImage(id)
	f, err := os.OpenFile(img, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("volume image: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			p.DeleteVolume(context.WithoutCancel(ctx), id)
		}
	}()
	err = f.Truncate(sizeMB << 20)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// No reserved blocks: the cap is what the sandbox may write.
	if out, err := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-m", "0", "-E", "root_owner=0:0", img).CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4: %v: %s", err, strings.TrimSpace(string(out)))
	}
	if err := p.mountVolume(ctx, id); err != nil {
		return err
	}
	// Any user of a sandbox writes there, as in /tmp.
	if err := os.Mkdir(p.volumeData(id), 0o777); err != nil {
		return err
	}
	if err := os.Chmod(p.volumeData(id), 0o1777); err != nil {
		return err
	}
	ok = true
	return nil
}

// mountVolume loop-mounts a volume's image at its directory, unless it is.
func (p *Provider) mountVolume(ctx context.Context, id string) error {
	dir := p.volumeMount(id)
	if mounted(dir) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "mount", "-o", "loop,nosuid,nodev", p.volumeImage(id), dir).CombinedOutput(); err != nil {
		return fmt.Errorf("mounting volume %s: %v: %s", id, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// mounted reports whether dir is a mount point: another device than its
// parent's.
func mounted(dir string) bool {
	var st, parent unix.Stat_t
	if unix.Stat(dir, &st) != nil || unix.Stat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}

// mountVolumes mounts every volume image of the data dir: New's, after a
// reboot.
func (p *Provider) mountVolumes() error {
	ids, err := p.Volumes(context.Background())
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		errs = append(errs, p.mountVolume(context.Background(), id))
	}
	return errors.Join(errs...)
}

// ResizeVolume implements sbx.VolumeProvider: unmounted (no sandbox
// mounts it: ext4's online resize is refused on these hosts), the image
// grows, is checked and its filesystem grown, and it is mounted again.
func (p *Provider) ResizeVolume(ctx context.Context, id string, sizeMB int64) (err error) {
	defer func() { err = p.hide(err) }()
	if !idPattern.MatchString(id) {
		return fmt.Errorf("volume ID %q is not one the local provider accepts", id)
	}
	if dir := p.volumeMount(id); mounted(dir) {
		if err := unix.Unmount(dir, 0); err != nil {
			return fmt.Errorf("unmounting volume %s: %w", id, err)
		}
	}
	defer func() {
		if merr := p.mountVolume(context.WithoutCancel(ctx), id); err == nil {
			err = merr
		}
	}()
	img := p.volumeImage(id)
	if err := released(ctx, img); err != nil {
		return err
	}
	if err := os.Truncate(img, sizeMB<<20); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "e2fsck", "-f", "-p", img).CombinedOutput(); err != nil {
		if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() > 1 { // 1: errors corrected
			return fmt.Errorf("e2fsck: %v: %s", err, strings.TrimSpace(string(out)))
		}
	}
	if out, err := exec.CommandContext(ctx, "resize2fs", img).CombinedOutput(); err != nil {
		return fmt.Errorf("resize2fs: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// DeleteVolume implements sbx.VolumeProvider.
func (p *Provider) DeleteVolume(ctx context.Context, id string) (err error) {
	defer func() { err = p.hide(err) }()
	if !idPattern.MatchString(id) {
		return fmt.Errorf("volume ID %q is not one the local provider accepts", id)
	}
	dir := p.volumeMount(id)
	if mounted(dir) {
		if err := unix.Unmount(dir, 0); err != nil {
			return fmt.Errorf("unmounting volume %s: %w", id, err)
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Remove(p.volumeImage(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Volumes implements sbx.VolumeProvider.
func (p *Provider) Volumes(ctx context.Context) ([]string, error) {
	imgs, err := filepath.Glob(filepath.Join(p.volumesDir(), "*.img"))
	var ids []string
	for _, img := range imgs {
		if id := strings.TrimSuffix(filepath.Base(img), ".img"); idPattern.MatchString(id) {
			ids = append(ids, id)
		}
	}
	return ids, err
}

// VolumeRoot implements sbx.VolumeProvider.
func (p *Provider) VolumeRoot(ctx context.Context, id string) (*os.Root, error) {
	if !idPattern.MatchString(id) {
		return nil, fmt.Errorf("volume ID %q is not one the local provider accepts", id)
	}
	if err := p.mountVolume(ctx, id); err != nil {
		return nil, p.hide(err)
	}
	return os.OpenRoot(p.volumeData(id))
}

// CheckMount implements sbx.VolumeProvider. runsc makes a mount point
// that the root lacks in the template's own tree, which is shared and
// must not change: a volume mounts on a directory the template has.
func (p *Provider) CheckMount(ctx context.Context, template, at string) error {
	t, err := p.cfg.Templates.Current(template)
	if err != nil {
		return nil // Admit answers a missing template; an image's tree is checked when pulled
	}
	return checkMountPoint(t.Rootfs(), at)
}

// checkMountPoint says why at cannot take a volume in the tree rootfs.
func checkMountPoint(rootfs, at string) error {
	clean := path.Clean(at)
	for _, reserved := range []string{"/proc", "/dev", "/sys", "/.sbx", "/tmp"} {
		if clean == reserved || strings.HasPrefix(clean, reserved+"/") {
			return sbx.Invalid("volumes", "a volume cannot be mounted at %s: %s is the sandbox's own", at, reserved)
		}
	}
	if clean == "/" {
		return sbx.Invalid("volumes", "a volume cannot be mounted at /")
	}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return err
	}
	defer root.Close()
	fi, err := root.Stat(strings.TrimPrefix(clean, "/"))
	if err != nil || !fi.IsDir() {
		return sbx.Invalid("volumes", "a volume mounts on a directory the template has, and %s is none: mount it at one such as /mnt, /srv, /opt or /workspace", at)
	}
	return nil
}

// volumeMounts are the bundle's mounts of a sandbox's volumes.
func (p *Provider) volumeMounts(vols []sbx.VolumeMount) ([]specs.Mount, error) {
	var out []specs.Mount
	for _, v := range vols {
		if !idPattern.MatchString(v.VolumeID) {
			return nil, fmt.Errorf("volume ID %q is not one the local provider accepts", v.VolumeID)
		}
		if !mounted(p.volumeMount(v.VolumeID)) {
			return nil, fmt.Errorf("volume %s is not on this host", v.Name)
		}
		mode := "rw"
		if v.ReadOnly {
			mode = "ro"
		}
		out = append(out, specs.Mount{Destination: path.Clean(v.Path), Type: "bind", Source: p.volumeData(v.VolumeID),
			Options: []string{"rbind", mode, "nosuid", "nodev"}})
	}
	return out, nil
}

// released waits, at most 10 s, until no loop device holds img: a copy of
// its mount in another mount namespace of the host (a process that
// unshared it) keeps the filesystem live after serve's unmount, and
// growing it under that mount would corrupt it.
func released(ctx context.Context, img string) error {
	for range 100 {
		out, err := exec.CommandContext(ctx, "losetup", "-j", img).Output()
		if err != nil {
			return fmt.Errorf("losetup -j: %w", err)
		}
		if strings.TrimSpace(string(out)) == "" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return sbx.Errorf(sbx.EConflict, "the volume is still mounted by another process of the host; try again")
}
