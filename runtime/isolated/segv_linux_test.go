//go:build linux && (amd64 || arm64)

package isolated_test

import (
	"syscall"
	"unsafe"
)

// realSegfault: segfault dies by SIGSEGV, as a crashing C library would.
const realSegfault = true

var nilPointer *int

// segfault restores SIGSEGV's default action (the Go runtime would turn
// the fault into a panic) and dereferences nil.
func segfault() {
	var act [4]uint64 // struct sigaction: SIG_DFL, no flags, no restorer, empty mask
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGSEGV), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	*nilPointer = 1
}
