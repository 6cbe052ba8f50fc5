//go:build unix && !(linux && (amd64 || arm64))

package isolated_test

import (
	"os"
	"syscall"
)

// realSegfault: here the Go runtime catches the SIGSEGV and exits 2.
const realSegfault = false

func segfault() { _ = syscall.Kill(os.Getpid(), syscall.SIGSEGV) }
