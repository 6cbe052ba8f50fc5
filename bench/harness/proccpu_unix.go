//go:build unix

package harness

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) this process has used: the
// producers and the worker, the Go side of every measurement.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
