package local

import (
	"sort"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sbxdev/sbx"
)

// caps is what a sandbox's root may do: runsc's default set, and what the
// agent needs to start commands as any user of the image and to give new
// files to them (Docker's defaults include the same). A command started as
// another user loses them all when the agent sets its UID, and
// NoNewPrivileges keeps it from getting any back (no setuid binaries).
var caps = []string{"CAP_AUDIT_WRITE", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_NET_BIND_SERVICE", "CAP_SETGID", "CAP_SETUID"}

// maxPids bounds the host tasks of one sandbox's sentry (not guest processes).
const maxPids = 4096

// maxProcs bounds the processes inside one sandbox (RLIMIT_NPROC, which
// gVisor enforces for the guest), so a fork bomb stops at the limit.
const maxProcs = 2048

// OCISpec is the OCI runtime spec of a sandbox: init as its first process,
// rootfs (the template's tree) as root, which runsc lays the sandbox's own
// upper layer over, the requested CPU and memory as cgroup limits, a process
// limit, the capabilities of caps, the caller's env, the
// network namespace netns (empty: a new one) and the GPU devices. Tenant
// annotations are never copied in: some change runsc flags. The lifecycle
// benchmark runs its raw baselines with the same spec.
func OCISpec(spec sbx.Spec, rootfs string, init []string, cgroupsPath, netns string, devices []specs.LinuxDevice) *specs.Spec {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "TERM=xterm"}
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+spec.Env[k])
	}
	period := uint64(100000)
	quota := spec.Resources.MilliCPU * int64(period) / 1000
	memory := spec.Resources.MemoryMB << 20
	pids := int64(maxPids)
	return &specs.Spec{
		Version:  specs.Version,
		Hostname: spec.ProviderSandboxID,
		Root:     &specs.Root{Path: rootfs},
		Process: &specs.Process{
			Args: init,
			Env:  env, Cwd: "/workspace", NoNewPrivileges: true,
			Capabilities: &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps},
			Rlimits: []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1 << 20, Soft: 1 << 20},
				{Type: "RLIMIT_NPROC", Hard: maxProcs, Soft: maxProcs}},
		},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs"},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		},
		Linux: &specs.Linux{
			CgroupsPath: cgroupsPath,
			Resources: &specs.LinuxResources{
				CPU:    &specs.LinuxCPU{Quota: &quota, Period: &period},
				Memory: &specs.LinuxMemory{Limit: &memory},
				Pids:   &specs.LinuxPids{Limit: &pids},
			},
			Namespaces: []specs.LinuxNamespace{{Type: "pid"}, {Type: "network", Path: netns}, {Type: "ipc"}, {Type: "uts"}, {Type: "mount"}},
			Devices:    devices,
		},
	}
}
