//go:build unix

package isolated

import (
	"os"
	"os/signal"
	"syscall"
)

// procAttr puts the child in a process group of its own, so that it and
// everything it starts can be killed together.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup SIGKILLs the child's process group (the group's ID is the
// child's pid).
func killGroup(p *os.Process) {
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		_ = p.Kill()
	}
}

// killOwnGroup SIGKILLs the process group the calling process leads
// (itself included), if it leads one.
func killOwnGroup() {
	if leadsGroup() {
		_ = syscall.Kill(0, syscall.SIGKILL)
	}
}

// survivePipes makes a write to a broken stdout or stderr pipe fail with
// EPIPE rather than kill the process: the Go runtime raises SIGPIPE for
// descriptors 1 and 2 only while nothing is notified of it. (Unlike
// ignoring the signal, this does not carry over to the programs the child
// executes.)
func survivePipes() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) }

// protocolOut returns the file the child's frames go to: a duplicate of
// its original stdout, which is then pointed at stderr, so that whatever
// else writes to descriptor 1 (Go code or C) lands in stderr and cannot
// corrupt the protocol. Where descriptors cannot be moved, only os.Stdout
// is redirected.
func protocolOut() *os.File {
	syscall.ForkLock.RLock() // no child may inherit the duplicate
	fd, err := syscall.Dup(1)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err == nil && dupTo(2, 1) == nil {
		return os.NewFile(uintptr(fd), "sluice-protocol")
	}
	if err == nil {
		_ = syscall.Close(fd)
	}
	out := os.Stdout
	os.Stdout = os.Stderr
	return out
}
