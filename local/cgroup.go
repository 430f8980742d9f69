package local

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// unified reports whether the host runs cgroup v2; read once, since Watch
// asks for every sandbox every second.
var unified = sync.OnceValue(func() bool {
	_, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers"))
	return err == nil
})

// cgroupsPath is a sandbox's OCI cgroupsPath: /<CgroupParent>/<id>.
func (l layout) cgroupsPath(id string) string { return "/" + l.cgroupParent + "/" + id }

// memoryCgroup is the directory holding a sandbox's memory accounting.
func (l layout) memoryCgroup(id string) string {
	if unified() {
		return filepath.Join(cgroupRoot, l.cgroupsPath(id))
	}
	return filepath.Join(cgroupRoot, "memory", l.cgroupsPath(id))
}

// alive reports whether any process of the sandbox is left in its cgroup.
func (p *Provider) alive(id string) bool {
	data, err := os.ReadFile(filepath.Join(p.memoryCgroup(id), "cgroup.procs"))
	return err == nil && strings.TrimSpace(string(data)) != ""
}

// oomKills counts the processes the kernel killed for exceeding the
// sandbox's memory limit.
func (p *Provider) oomKills(id string) int {
	file := "memory.oom_control"
	if unified() {
		file = "memory.events"
	}
	f, err := os.Open(filepath.Join(p.memoryCgroup(id), file))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
			v, _ := strconv.Atoi(n)
			return v
		}
	}
	return 0
}

// cgroupIDs lists the sandboxes that have a cgroup on this host.
func (p *Provider) cgroupIDs() []string {
	entries, _ := os.ReadDir(filepath.Dir(p.memoryCgroup("x")))
	var ids []string
	for _, e := range entries {
		if e.IsDir() && idPattern.MatchString(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

// removeCgroups removes a sandbox's cgroup from every hierarchy; runsc
// leaves them behind when its sandbox died on its own.
func (p *Provider) removeCgroups(id string) error {
	dirs := []string{filepath.Join(cgroupRoot, p.cgroupsPath(id))}
	if !unified() {
		dirs, _ = filepath.Glob(filepath.Join(cgroupRoot, "*", p.cgroupsPath(id)))
	}
	var errs []error
	for _, d := range dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
