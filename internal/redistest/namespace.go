// Package redistest is the test harness around real Redis: Main starts a
// test package's shared server (and a 3-node cluster when asked for) with
// internal/redisproc and checks for leaked goroutines; NewNamespace gives
// each test keys of its own, so tests share one server (and run with
// t.Parallel) without FLUSHDB; Eventually and Within wait on state that
// no signal reports.
package redistest

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
)

// NewNamespace returns a namespace unique to this call ("t" followed by 12
// random hex digits), for prefixing every key a test touches so that tests
// sharing one server never collide.
func NewNamespace(tb testing.TB) string {
	tb.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatalf("redistest: random namespace: %v", err)
	}
	return "t" + hex.EncodeToString(b[:])
}
