//go:build !(linux && (amd64 || arm64))

package main

import (
	"runtime/debug"
	"time"
)

// segfault dies by a signal (SIGABRT here: the Go runtime keeps SIGSEGV).
func segfault() {
	debug.SetTraceback("crash") // an unrecovered panic raises SIGABRT
	go panic("segfault: simulated")
	time.Sleep(time.Hour)
}
