package local

import (
	"sort"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/template"
)

// caps is what a sandbox's processes may do: runsc's default set, no more.
var caps = []string{"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"}

// maxPids bounds the host tasks of one sandbox's sentry (not guest processes).
const maxPids = 4096

// ociSpec is the OCI runtime spec of a sandbox: the template's tree as root
// (runsc lays the sandbox's own upper layer over it), the requested CPU and
// memory as cgroup limits, no capabilities beyond runsc's defaults, and the
// caller's env. Tenant annotations are never copied in: some change runsc flags.
func ociSpec(spec sbx.Spec, tmpl template.Template) *specs.Spec {
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
		Root:     &specs.Root{Path: tmpl.Rootfs()},
		Process: &specs.Process{
			// Until the agent is PID 1, the sandbox holds one idle process.
			Args: []string{"/bin/sleep", "infinity"},
			Env:  env, Cwd: "/workspace", NoNewPrivileges: true,
			Capabilities: &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps},
			Rlimits:      []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1 << 20, Soft: 1 << 20}},
		},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs"},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		},
		Linux: &specs.Linux{
			CgroupsPath: "/sbx/" + spec.ProviderSandboxID,
			Resources: &specs.LinuxResources{
				CPU:    &specs.LinuxCPU{Quota: &quota, Period: &period},
				Memory: &specs.LinuxMemory{Limit: &memory},
				Pids:   &specs.LinuxPids{Limit: &pids},
			},
			Namespaces: []specs.LinuxNamespace{{Type: "pid"}, {Type: "network"}, {Type: "ipc"}, {Type: "uts"}, {Type: "mount"}},
		},
	}
}
