// Package testkit is the harness the packages' tests share, so that none
// keeps its own copy: a test's namespace with its clients (Env), workers
// run until the test ends with their test signals on (StartWorker), and
// waits on those signals instead of on time (WaitState). It also has the
// small helpers every test file wrote again (Must, Recv, NoRecv, Chan,
// Quiet), and a fault: FailCalls cuts one script's calls to one
// partition, for the batched calls whose one partition's failure must
// stay its jobs' own.
//
// Only _test.go files import it: it imports testing, and the packages it
// imports (runtime, flow) cannot import it back, so their internal tests
// (package runtime, package flow) cannot use it either. State that no
// signal reports (another process's work, Redis expiring a key) is
// polled with redistest.Within, with a comment that says why.
package testkit

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testsignal"
)

// Timeout bounds every wait of a test: generous, for -race on two shared
// cores.
const Timeout = testsignal.Timeout

// PushedLease says whether lease is one an enqueue pushed to an idle
// worker, <worker>/<start>/<nonce>.p<k> (lua/lib_offer.lua), rather than
// one a claim gave: the part after the worker, whose ID may hold ".p" (a
// host name's), says so.
func PushedLease(lease string) bool {
	return strings.Contains(lease[strings.LastIndexByte(lease, '/')+1:], ".p")
}

// Quiet is the logger of workers whose logs no test reads.
var Quiet = slog.New(slog.DiscardHandler)

// Must fails the test at once if err is not nil.
func Must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// Chan returns a channel for handlers to report on, buffered so that a
// handler never blocks on it.
func Chan[T any]() chan T { return make(chan T, 64) }

// Recv waits for a value on ch, failing the test after Timeout.
func Recv[T any](tb testing.TB, ch <-chan T, what string) T {
	tb.Helper()
	t := time.NewTimer(Timeout)
	defer t.Stop()
	select {
	case v := <-ch:
		return v
	case <-t.C:
		tb.Fatalf("timed out after %s waiting for %s", Timeout, what)
	}
	panic("unreachable")
}

// NoRecv fails the test if a value is waiting on ch right now.
func NoRecv[T any](tb testing.TB, ch <-chan T, what string) {
	tb.Helper()
	select {
	case v := <-ch:
		tb.Errorf("unexpected %s: %v", what, v)
	default:
	}
}
