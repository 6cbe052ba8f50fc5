package isolated

import (
	"os"
	"syscall"
	"unsafe"
)

// awaitExit returns once the child has exited, without reaping it: until
// it is reaped its pid (its process group's ID) cannot be reused, so
// killing the group afterwards cannot hit an unrelated process.
func awaitExit(s *session) {
	const pPID = 1     // waitid's idtype P_PID
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(s.cmd.Process.Pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}

// dupTo makes descriptor newfd a copy of oldfd.
func dupTo(oldfd, newfd int) error { return syscall.Dup3(oldfd, newfd, 0) }

// leadsGroup reports whether the process leads its process group.
func leadsGroup() bool { return syscall.Getpgrp() == os.Getpid() }

// unread reports whether bytes written to f (a pipe) wait to be read: a
// child continued after a stop has its parent's frames queued there.
func unread(f *os.File) bool {
	sc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var n int32 // TIOCINQ writes a C int
	_ = sc.Control(func(fd uintptr) {
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
		if errno != 0 {
			n = 0
		}
	})
	return n > 0
}
