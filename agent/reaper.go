package agent

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reaper is the one place that waits for the agent's children. As PID 1
// (or a child subreaper) the agent inherits every orphan of the sandbox
// and must reap them all, so one loop calls wait4(-1) on each SIGCHLD and
// hands the statuses of the agent's own children to whoever started them;
// nothing else may wait (not exec.Cmd.Wait, which would race the loop).
// Otherwise each child is waited for by PID.
type reaper struct {
	all bool // reap every child, not only those started through start

	mu    sync.Mutex
	exits map[int]chan syscall.WaitStatus // children started through start, until they exit
}

// processReaper is this process's reaper, made on first use: there can be
// only one loop calling wait4(-1) per process.
var processReaper = sync.OnceValue(func() *reaper { return newReaper(reapsOrphans()) })

// reapsOrphans reports whether orphans become this process's children: it
// is PID 1 of its namespace, or a child subreaper.
func reapsOrphans() bool {
	if os.Getpid() == 1 {
		return true
	}
	var on int32
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&on)), 0, 0, 0)
	return err == nil && on != 0
}

func newReaper(all bool) *reaper {
	r := &reaper{all: all, exits: map[int]chan syscall.WaitStatus{}}
	if all {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGCHLD)
		go func() {
			for range sigs {
				r.reap()
			}
		}()
		r.reap() // orphans that exited before the handler was in place
	}
	return r
}

// start calls fn, which starts one child and answers its PID, and answers
// a channel that receives the child's wait status when it exits.
func (r *reaper) start(fn func() (int, error)) (<-chan syscall.WaitStatus, error) {
	exit := make(chan syscall.WaitStatus, 1)
	if !r.all {
		pid, err := fn()
		if err != nil {
			return nil, err
		}
		go func() { exit <- waitPID(pid) }()
		return exit, nil
	}
	// Holding mu across the start keeps reap from collecting the child
	// before it is registered: reap waits on mu between wait4 and dispatch.
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := fn()
	if err != nil {
		return nil, err
	}
	r.exits[pid] = exit
	return exit, nil
}

// reap collects every child that has exited, without blocking, and hands
// the agent's own to their channels; orphans are simply gone.
func (r *reaper) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		if exit, ok := r.exits[pid]; ok {
			delete(r.exits, pid)
			exit <- ws
		}
	}
}

// waitPID waits for one child to exit.
func waitPID(pid int) syscall.WaitStatus {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			return ws
		}
	}
}
