package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The engines a host can run its sandboxes with.
const (
	// EngineRunsc runs each sandbox in gVisor: the default, for code sbx
	// does not trust.
	EngineRunsc = "runsc"
	// EngineRunc runs each sandbox as a plain Linux container, for trusted
	// work: it shares the host's kernel, cannot hibernate (no checkpoint
	// without CRIU), offers no GPU sharing (that is gVisor's nvproxy) and its
	// writable layer is not size-capped.
	EngineRunc = "runc"
)

// runc reports whether this host runs its sandboxes with runc.
func (p *Provider) runc() bool { return p.cfg.Engine == EngineRunc }

// rootDir is where a runc sandbox's root is mounted: the template's tree
// under an overlay whose upper layer is upperDir. (runsc lays its own upper
// layer over the template's tree.)
func (p *Provider) rootDir(id string) string { return filepath.Join(p.dir(id), "rootfs") }

func (p *Provider) upperDir(id string) string { return filepath.Join(p.dir(id), "upper") }

// mountRoot mounts a runc sandbox's root: the template's tree lower, the
// sandbox's own upper layer over it.
func (p *Provider) mountRoot(id, lower string) (string, error) {
	root, upper, work := p.rootDir(id), p.upperDir(id), filepath.Join(p.dir(id), "work")
	for _, d := range []string{root, upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", err
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work)
	if err := syscall.Mount("overlay", root, "overlay", 0, opts); err != nil {
		return "", fmt.Errorf("mounting the sandbox's root (overlay %s): %w", opts, err)
	}
	return root, nil
}

// unmountRoot unmounts a runc sandbox's root, if it is mounted.
func (p *Provider) unmountRoot(id string) error {
	err := syscall.Unmount(p.rootDir(id), syscall.MNT_DETACH)
	if err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
		return nil // not a mount point, or no such directory
	}
	return fmt.Errorf("unmounting the root of sandbox %s: %w", id, err)
}

// upperUsed is the size on disk of a runc sandbox's upper layer.
func (p *Provider) upperUsed(id string) int64 {
	var n int64
	filepath.WalkDir(p.upperDir(id), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

// runcSpec adapts a sandbox's spec to runc, which does not emulate what
// gVisor's sentry does: /dev/pts, /dev/shm and /dev/mqueue are mounted,
// the kernel's sensitive files masked, and the process limit enforced by the
// pids cgroup: RLIMIT_NPROC counts per host user, across sandboxes. Limits
// are inherited from sbx, since the sandbox may not raise them.
func runcSpec(s *specs.Spec) {
	s.Process.Rlimits = nil
	pids := int64(maxProcs)
	s.Linux.Resources.Pids.Limit = &pids
	s.Mounts = []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
	}
	s.Linux.MaskedPaths = []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"}
	s.Linux.ReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
}
