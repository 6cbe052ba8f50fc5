package main

import (
	"os"
	"strings"
)

// loadAverage is the 1, 5 and 15 minute load averages of /proc/loadavg,
// or "unknown" where there is none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
