package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/local"
)

// The baselines run the template's tree with the same runtime binaries,
// process and limits as the local provider, without the provider: no
// records, no network namespace (runsc --network=none), no sbx code between
// the caller and the runtime.

// idleInit is the local provider's default first process.
var idleInit = []string{"/bin/sleep", "infinity"}

// bundleSpec is the local provider's OCI spec for init on rootfs, with no
// network namespace of its own to join. runc gets a read-only root, a tmpfs
// on /tmp and the host's rlimits (it applies rlimits to host processes,
// where raising them is not allowed); runsc lays its own overlay over the
// root instead.
func bundleSpec(rootfs string, init []string, cgroupsPath string, memMB int64, readonly bool) *specs.Spec {
	spec := local.OCISpec(sbx.Spec{ProviderSandboxID: "bench", Resources: sbx.Resources{MilliCPU: milliCPU, MemoryMB: memMB}},
		rootfs, init, cgroupsPath, "", nil)
	if readonly {
		spec.Root.Readonly, spec.Process.Rlimits = true, nil
		spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs"})
	}
	return spec
}

// writeBundle writes spec as dir/config.json.
func writeBundle(dir string, spec *specs.Spec) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600)
}

// timed runs a command with its output appended to the file output (a pipe
// would be held open by a detached container) and returns how long it took.
func timed(ctx context.Context, output string, name string, args ...string) (time.Duration, error) {
	f, err := os.OpenFile(output, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	start := time.Now()
	err = cmd.Run()
	d := time.Since(start)
	if err != nil {
		data, _ := os.ReadFile(output)
		return d, fmt.Errorf("%s %s: %v: %s", filepath.Base(name), args[len(args)-1], err, lastLines(string(data), 3))
	}
	return d, nil
}

// quiet runs a command and returns its stdout, or an error with its stderr.
func quiet(ctx context.Context, name string, args ...string) ([]byte, error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s %s: %v: %s", filepath.Base(name), strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.Bytes(), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], " | ")
}

// rawRunsc runs bundles with runsc directly: the same binary, platform and
// overlay flag style as the local provider, and --network=none.
type rawRunsc struct {
	path, dir, cgroupParent string
}

func (r rawRunsc) root() string             { return filepath.Join(r.dir, "root") }
func (r rawRunsc) cdir(id string) string    { return filepath.Join(r.dir, id) }
func (r rawRunsc) bundle(id string) string  { return filepath.Join(r.cdir(id), "bundle") }
func (r rawRunsc) output(id string) string  { return filepath.Join(r.cdir(id), "output.log") }
func (r rawRunsc) image(id string) string   { return filepath.Join(r.cdir(id), "checkpoint") }
func (r rawRunsc) cgroup(id string) string  { return "/" + r.cgroupParent + "/" + id }
func (r rawRunsc) flags(id string) []string { return r.flagsFor(id, "--root", r.root()) }

// flagsFor are the top-level flags of every command on container id; the
// local provider passes the same ones (its overlay in the sandbox's directory).
func (r rawRunsc) flagsFor(id string, extra ...string) []string {
	return append(extra, "--platform", "systrap", "--network=none",
		fmt.Sprintf("--overlay2=root:dir=%s,size=%dm", r.cdir(id), 10<<10))
}

// run writes a bundle for init and times `runsc run --detach`.
func (r rawRunsc) run(ctx context.Context, rootfs, id string, init []string, memMB int64) (time.Duration, error) {
	if err := writeBundle(r.bundle(id), bundleSpec(rootfs, init, r.cgroup(id), memMB, false)); err != nil {
		return 0, err
	}
	return r.timed(ctx, id, "run", "--detach", "--bundle", r.bundle(id), id)
}

// timed times a runsc command on container id.
func (r rawRunsc) timed(ctx context.Context, id string, args ...string) (time.Duration, error) {
	return timed(ctx, r.output(id), r.path, append(r.flags(id), args...)...)
}

// remove deletes container id and its directory.
func (r rawRunsc) remove(ctx context.Context, id string) error {
	_, err := quiet(ctx, r.path, append(r.flags(id), "delete", "--force", id)...)
	if err != nil && strings.Contains(err.Error(), "does not exist") {
		err = nil
	}
	return errors.Join(err, os.RemoveAll(r.cdir(id)))
}

// removeAll deletes every container under the baseline's root.
func (r rawRunsc) removeAll(ctx context.Context) error {
	return removeAll(ctx, r.path, r.root(), r.remove)
}

// removeAll deletes, with remove, every container a runtime (runsc or runc,
// which list alike) holds under root.
func removeAll(ctx context.Context, runtime, root string, remove func(context.Context, string) error) error {
	if _, err := os.Stat(root); err != nil {
		return nil
	}
	out, err := quiet(ctx, runtime, "--root", root, "list", "--quiet")
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range strings.Fields(string(out)) {
		errs = append(errs, remove(ctx, id))
	}
	return errors.Join(errs...)
}

// rawRunc runs bundles with runc: a read-only root and a tmpfs on /tmp.
type rawRunc struct {
	path, dir, cgroupParent string
}

// findRunc finds runc on PATH (Debian's package `runc` puts it in /usr/sbin).
func findRunc() (string, bool) {
	for _, p := range []string{"runc", "/usr/sbin/runc", "/usr/bin/runc"} {
		if path, err := exec.LookPath(p); err == nil {
			return path, true
		}
	}
	return "", false
}

func (r *rawRunc) root() string { return filepath.Join(r.dir, "root") }

// run writes a bundle for the idle process and times `runc run --detach`.
func (r *rawRunc) run(ctx context.Context, rootfs, id string) (time.Duration, error) {
	bundle := filepath.Join(r.dir, id)
	if err := writeBundle(bundle, bundleSpec(rootfs, idleInit, "/"+r.cgroupParent+"/"+id, memoryMB, true)); err != nil {
		return 0, err
	}
	return timed(ctx, filepath.Join(bundle, "output.log"), r.path, "--root", r.root(), "run", "--detach", "--bundle", bundle, id)
}

func (r *rawRunc) remove(ctx context.Context, id string) error {
	_, err := quiet(ctx, r.path, "--root", r.root(), "delete", "--force", id)
	if err != nil && strings.Contains(err.Error(), "does not exist") {
		err = nil
	}
	return errors.Join(err, os.RemoveAll(filepath.Join(r.dir, id)))
}

func (r *rawRunc) removeAll(ctx context.Context) error {
	return removeAll(ctx, r.path, r.root(), r.remove)
}

// dockerCLI runs the template's tree, imported as an image, with `docker
// run` of the docker CLI, against the daemon at host.
type dockerCLI struct {
	host, image string

	mu         sync.Mutex
	imported   bool
	containers []string
}

// findDockerCLI returns a docker CLI when it is installed and the daemon
// at host answers it, else why not.
func findDockerCLI(tag, host string) (*dockerCLI, string) {
	if _, err := exec.LookPath("docker"); err != nil {
		return nil, "docker is not installed"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := exec.CommandContext(ctx, "docker", "-H", host, "info").Run(); err != nil {
		return nil, "no dockerd answers at " + host
	}
	return &dockerCLI{host: host, image: "sbxbench-" + tag}, ""
}

// run imports the tree on first use, then times `docker run -d` of the idle
// process with the same limits and no network.
func (d *dockerCLI) run(ctx context.Context, rootfs, id, output string) (time.Duration, error) {
	d.mu.Lock()
	if !d.imported {
		cmd := exec.CommandContext(ctx, "sh", "-c", `tar -C "$1" -c . | docker -H "$3" import - "$2"`, "sh", rootfs, d.image, d.host)
		if out, err := cmd.CombinedOutput(); err != nil {
			d.mu.Unlock()
			return 0, fmt.Errorf("docker import: %v: %s", err, out)
		}
		d.imported = true
	}
	d.containers = append(d.containers, id)
	d.mu.Unlock()
	return timed(ctx, output, "docker", "-H", d.host, "run", "-d", "--name", id, "--network", "none", "--cpus", "1",
		"--memory", fmt.Sprintf("%dm", memoryMB), "--pids-limit", fmt.Sprint(pidsMax), d.image, idleInit[0], idleInit[1])
}

func (d *dockerCLI) remove(ctx context.Context, id string) error {
	_, err := quiet(ctx, "docker", "-H", d.host, "rm", "-f", id)
	return err
}

func (d *dockerCLI) removeAll(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, id := range d.containers {
		if _, err := quiet(ctx, "docker", "-H", d.host, "rm", "-f", id); err != nil && !strings.Contains(err.Error(), "No such container") {
			errs = append(errs, err)
		}
	}
	if d.imported {
		_, err := quiet(ctx, "docker", "-H", d.host, "rmi", d.image)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
