package runtime_test

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/runtime"
)

// TestExponentialBackoffDoublesToMax: without jitter the delays double
// from base and stay at max, also where doubling would pass max by far or
// overflow a Duration (an "unbounded" max of math.MaxInt64 once gave
// negative delays from the 35th attempt on: a retry at once, for ever).
func TestExponentialBackoffDoublesToMax(t *testing.T) {
	t.Parallel()
	b := runtime.ExponentialBackoff(time.Second, 10*time.Second, 0)
	for attempt, want := range map[int]time.Duration{
		-1: time.Second, 0: time.Second, 1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second,
		5: 10 * time.Second, 100: 10 * time.Second, math.MaxInt: 10 * time.Second,
	} {
		if got := b(attempt); got != want {
			t.Errorf("1s..10s: attempt %d: %s, want %s", attempt, got, want)
		}
	}
	unbounded := runtime.ExponentialBackoff(time.Second, math.MaxInt64, 0)
	prev := time.Duration(0)
	for attempt := 1; attempt <= 100; attempt++ {
		d := unbounded(attempt)
		if d < prev {
			t.Fatalf("max MaxInt64: attempt %d: %s, after %s", attempt, d, prev)
		}
		prev = d
	}
	if prev != math.MaxInt64 {
		t.Errorf("max MaxInt64: attempt 100: %s, want max", prev)
	}
	if d := runtime.ExponentialBackoff(0, time.Hour, 0)(math.MaxInt); d != 0 {
		t.Errorf("base 0: %s, want 0", d)
	}
	if d := runtime.ExponentialBackoff(-time.Second, time.Hour, 0)(3); d != 0 {
		t.Errorf("base -1s: %s, want 0", d)
	}
}

// TestExponentialBackoffJitterBounds: a jittered delay is never negative
// nor above max, whatever the jitter: one of 1.5 once spread delays below
// zero (-2.36s at the 4th attempt), one of +Inf made them all negative.
// A jitter of 1 or more is taken as just under 1, so delays stay positive.
func TestExponentialBackoffJitterBounds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		base, max time.Duration
		jitter    float64
	}{
		{"0.2", time.Second, time.Hour, 0.2},
		{"1", time.Second, time.Hour, 1},
		{"1.5", time.Second, time.Hour, 1.5},
		{"+Inf", time.Second, time.Hour, math.Inf(1)},
		{"-0.5", time.Second, time.Hour, -0.5},
		{"NaN", time.Second, time.Hour, math.NaN()},
		{"max MaxInt64, 0.5", time.Second, math.MaxInt64, 0.5},
	}
	for _, c := range cases {
		b := runtime.ExponentialBackoff(c.base, c.max, c.jitter)
		for attempt := 1; attempt <= 100; attempt++ {
			for range 20 {
				if d := b(attempt); d <= 0 || d > c.max {
					t.Errorf("jitter %s: attempt %d: %s, want in (0, %s]", c.name, attempt, d, c.max)
					break
				}
			}
		}
	}
	// no jitter at all for a negative or NaN one
	for _, j := range []float64{-0.5, math.NaN()} {
		if d := runtime.ExponentialBackoff(time.Second, time.Hour, j)(3); d != 4*time.Second {
			t.Errorf("jitter %v: attempt 3: %s, want 4s", j, d)
		}
	}
}

// TestDefaultBackoffSpread: DefaultBackoff's documented delays, ±20%,
// capped at an hour.
func TestDefaultBackoffSpread(t *testing.T) {
	t.Parallel()
	for attempt, base := range map[int]time.Duration{1: time.Second, 3: 4 * time.Second, 13: time.Hour, 1000: time.Hour} {
		for range 50 {
			d := runtime.DefaultBackoff(attempt)
			if lo, hi := base*8/10, min(base*12/10, time.Hour); d < lo || d > hi {
				t.Fatalf("attempt %d: %s, want in [%s, %s]", attempt, d, lo, hi)
			}
		}
	}
}
