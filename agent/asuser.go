package agent

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// as runs fn, a file operation, with the credentials of acct on the
// calling thread alone (the effective user and group and the supplementary
// groups; the saved user stays the agent's, to come back): what fn makes
// belongs to acct, and fn is refused what acct may not do. So a symbolic
// link that code running as acct planted cannot lead the agent, root, to
// write where acct could not (a file of /etc/profile.d, say, that root
// would run). Go's own Setresuid changes every thread, so the raw system
// calls; the thread stays locked to this goroutine, and if the agent's
// credentials cannot be put back, the thread ends with it.
func (acct *account) as(fn func() error) error {
	if acct.cred == nil {
		return fn()
	}
	runtime.LockOSThread()
	uid, gid := os.Geteuid(), os.Getegid()
	groups, err := syscall.Getgroups()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	if err := setThreadCreds(acct.cred.Uid, acct.cred.Gid, acct.cred.Groups); err != nil {
		restored := setThreadCreds(uint32(uid), uint32(gid), uint32s(groups)) == nil
		if restored {
			runtime.UnlockOSThread()
		}
		return fmt.Errorf("acting as user %s: %w", acct.name, err)
	}
	err = fn()
	if setThreadCreds(uint32(uid), uint32(gid), uint32s(groups)) == nil {
		runtime.UnlockOSThread()
	}
	return err
}

// setThreadCreds sets the calling thread's supplementary groups, effective
// group and effective user, in the order that keeps the privilege to set
// the next (coming back, the user first).
func setThreadCreds(uid, gid uint32, groups []uint32) error {
	back := uint32(os.Geteuid()) != uid && uid == 0
	if back {
		if err := setres(syscall.SYS_SETRESUID, uid); err != nil {
			return err
		}
	}
	var p unsafe.Pointer
	if len(groups) > 0 {
		p = unsafe.Pointer(&groups[0])
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, uintptr(len(groups)), uintptr(p), 0); e != 0 {
		return e
	}
	if err := setres(syscall.SYS_SETRESGID, gid); err != nil {
		return err
	}
	if !back {
		return setres(syscall.SYS_SETRESUID, uid)
	}
	return nil
}

// setres sets only the effective ID of a setresuid or setresgid call.
func setres(trap uintptr, id uint32) error {
	keep := ^uintptr(0) // -1: unchanged
	if _, _, e := syscall.RawSyscall(trap, keep, uintptr(id), keep); e != 0 {
		return e
	}
	return nil
}

func uint32s(ints []int) []uint32 {
	out := make([]uint32, len(ints))
	for i, v := range ints {
		out[i] = uint32(v)
	}
	return out
}
