package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/local/runsc"
)

// runcEngine runs sandboxes as plain Linux containers, for trusted work:
// the same bundle adapted (runcSpec), the root an overlay mount of the
// template's tree under the sandbox's own upper directory.
type runcEngine struct {
	layout
	rs runsc.Runsc
}

func newRunc(l layout, path string) *runcEngine {
	return &runcEngine{layout: l, rs: runsc.Runsc{Path: path, Root: filepath.Join(l.dataDir, "runc"), Runtime: runsc.Runc}}
}

func (e *runcEngine) name() string { return EngineRunc }

func (e *runcEngine) command() runsc.Runsc { return e.rs }

// flags: none. runc has no cap on the writable layer, and gives a sandbox
// without sbx's network an empty namespace of its own.
func (e *runcEngine) flags(id string, diskMB int64, networked bool) []string { return nil }

// passFiles: runc passes the first n descriptors after stdio on.
func (e *runcEngine) passFiles(n int) []string { return []string{"--preserve-fds", strconv.Itoa(n)} }

func (e *runcEngine) hibernate() error {
	return sbx.Errorf(sbx.EUnsupported, "this host runs sandboxes with runc, which cannot checkpoint them: only the runsc engine hibernates; pause keeps a sandbox in memory")
}

func (e *runcEngine) shareGPUs() error {
	return sbx.Errorf(sbx.EUnsupported, "this host runs sandboxes with runc, which cannot share GPUs: GPU sandboxes need the runsc engine (gVisor's nvproxy)")
}

func (e *runcEngine) adapt(s *specs.Spec) { runcSpec(s) }

// rootDir is where a runc sandbox's root is mounted: the template's tree
// under an overlay whose upper layer is upperDir.
func (e *runcEngine) rootDir(id string) string { return filepath.Join(e.dir(id), "rootfs") }

func (e *runcEngine) upperDir(id string) string { return filepath.Join(e.dir(id), "upper") }

// root mounts a runc sandbox's root: the template's tree lower, the
// sandbox's own upper layer over it.
func (e *runcEngine) root(id, lower string) (string, error) {
	root, upper, work := e.rootDir(id), e.upperDir(id), filepath.Join(e.dir(id), "work")
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

// removeRoot unmounts a runc sandbox's root, if it is mounted.
func (e *runcEngine) removeRoot(id string) error {
	err := syscall.Unmount(e.rootDir(id), syscall.MNT_DETACH)
	if err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
		return nil // not a mount point, or no such directory
	}
	return fmt.Errorf("unmounting the root of sandbox %s: %w", id, err)
}

// layerUsed is the size on disk of a runc sandbox's upper layer.
func (e *runcEngine) layerUsed(id string) int64 {
	var n int64
	filepath.WalkDir(e.upperDir(id), func(path string, d fs.DirEntry, err error) error {
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
