//go:build !unix

package harness

import "time"

// processCPU is not measured on this platform; it reads zero.
func processCPU() time.Duration { return 0 }
