package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// deleteTable removes the run's nftables table once no sandbox uses it.
func deleteTable(ctx context.Context, name string) error {
	_, err := quiet(ctx, "nft", "delete", "table", "inet", name)
	if err != nil && strings.Contains(err.Error(), "No such file") {
		return nil
	}
	return err
}

// killProcessesUnder kills what is left of the run's runsc processes (their
// command lines name its directory), after the runtimes removed theirs.
func killProcessesUnder(dir string) error {
	pids := pidsNaming(dir + "/")
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for range 50 {
		if len(pidsNaming(dir+"/")) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(pids) > 0 {
		return fmt.Errorf("%d runsc processes outlived their containers and were killed", len(pids))
	}
	return nil
}

// unmountUnder unmounts whatever is mounted under dir, such as the empty
// network namespace runsc mounts in its root for --network=none.
func unmountUnder(dir string) error {
	var errs []error
	for range 100 { // mounts may be stacked
		points := mountsUnder(dir)
		if len(points) == 0 {
			return nil
		}
		slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
		for _, p := range points {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
	}
	return nil
}

func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	return points
}

// removeCgroupParent removes a cgroup parent of the run, and what is left
// under it, in every hierarchy.
func removeCgroupParent(name string) error {
	parents, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", name))
	if unified() {
		parents = []string{filepath.Join(cgroupRoot, name)}
	}
	var errs []error
	for _, parent := range parents {
		children, _ := os.ReadDir(parent)
		for _, c := range children {
			if c.IsDir() {
				errs = append(errs, rmdir(filepath.Join(parent, c.Name())))
			}
		}
		errs = append(errs, rmdir(parent))
	}
	return errors.Join(errs...)
}

func rmdir(dir string) error {
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
