//go:build linux && (amd64 || arm64)

package main

import (
	"syscall"
	"unsafe"
)

var nilPointer *int

// segfault dies by SIGSEGV: it restores the signal's default action (the
// Go runtime would turn the fault into a panic) and dereferences nil.
func segfault() {
	var act [4]uint64 // struct sigaction: SIG_DFL, no flags, no restorer, empty mask
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGSEGV), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	*nilPointer = 1
}
