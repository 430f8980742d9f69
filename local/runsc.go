package local

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sbxdev/sbx/local/runsc"
)

// runscEngine runs sandboxes in gVisor. runsc lays each sandbox's upper
// layer over the template's tree itself, in an unlinked file of the
// sandbox's directory capped at its disk size, and checkpoints and restores
// sandboxes; its nvproxy shares GPUs.
type runscEngine struct {
	layout
	rs runsc.Runsc
}

func newRunsc(l layout, path string) *runscEngine {
	return &runscEngine{layout: l, rs: runsc.Runsc{Path: path, Root: filepath.Join(l.dataDir, "runsc"), Runtime: runsc.Gvisor}}
}

func (e *runscEngine) name() string { return EngineRunsc }

func (e *runscEngine) command() runsc.Runsc { return e.rs }

func (e *runscEngine) flags(id string, diskMB int64, networked bool) []string {
	flags := []string{fmt.Sprintf("--overlay2=root:dir=%s,size=%dm", e.dir(id), diskMB)}
	if !networked {
		flags = append(flags, "--network=none")
	}
	return flags
}

func (e *runscEngine) root(id, lower string) (string, error) { return lower, nil }

func (e *runscEngine) removeRoot(id string) error { return nil }

func (e *runscEngine) adapt(s *specs.Spec) {}

// passFiles: runsc's descriptor 3 is the first of ExtraFiles.
func (e *runscEngine) passFiles(n int) []string {
	var flags []string
	for fd := 3; fd < 3+n; fd++ {
		flags = append(flags, "--pass-fd", fmt.Sprintf("%d:%d", fd, fd))
	}
	return flags
}

func (e *runscEngine) hibernate() error { return nil }

func (e *runscEngine) shareGPUs() error { return nil }

// layerUsed is the size on disk of runsc's unlinked file, held open by a
// process of the sandbox's cgroup (the sandbox process).
func (e *runscEngine) layerUsed(id string) int64 {
	data, _ := os.ReadFile(filepath.Join(e.memoryCgroup(id), "cgroup.procs"))
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			if n := e.fileUsed(id, pid); n > 0 {
				return n
			}
		}
	}
	return 0
}

// fileUsed is the size on disk of the writable layer's file if process pid
// holds it open.
func (e *runscEngine) fileUsed(id string, pid int) int64 {
	fdDir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, _ := os.ReadDir(fdDir)
	prefix := filepath.Join(e.dir(id), "runsc-filestore-")
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err != nil || !strings.HasPrefix(target, prefix) {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join(fdDir, fd.Name()), &st) == nil {
			return st.Blocks * 512
		}
	}
	return 0
}
