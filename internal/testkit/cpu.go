package testkit

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ProcessCPU is this process's CPU time (user + system), for benchmarks
// that report CPU per operation: steadier than wall time on a shared
// machine.
func ProcessCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ServerCPU is the redis-server's CPU time (INFO cpu: used_cpu_user +
// used_cpu_sys).
func ServerCPU(tb testing.TB, rdb redis.UniversalClient) time.Duration {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var total float64
	for line := range strings.SplitSeq(info, "\r\n") {
		name, v, _ := strings.Cut(line, ":")
		if name == "used_cpu_user" || name == "used_cpu_sys" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatal(err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}
