package runtime_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
)

// TestOptionsOutOfBounds: options that NewWorker once accepted and that
// then took the process down or spun are refused with ErrInvalidOptions:
// an EventBuffer of 1<<50 panicked in NewWorker (makechan: size out of
// range), a Concurrency of math.MaxInt at the first ack (its batcher's
// queue of 4*Concurrency wrapped), a ClaimBatch of math.MaxInt at Run (a
// claim's jobs are allocated up front), and periods under a millisecond.
func TestOptionsOutOfBounds(t *testing.T) {
	t.Parallel()
	onEvent := func(context.Context, runtime.Event) {}
	cases := map[string]runtime.Options{
		"Concurrency MaxInt":           {Concurrency: math.MaxInt},
		"Concurrency MaxConcurrency+1": {Concurrency: runtime.MaxConcurrency + 1},
		"ClaimBatch MaxInt":            {ClaimBatch: math.MaxInt},
		"ClaimBatch MaxClaimBatch+1":   {ClaimBatch: runtime.MaxClaimBatch + 1},
		"EventBuffer 1<<50":            {EventBuffer: 1 << 50, OnEvent: onEvent},
		"EventBuffer MaxEventBuffer+1": {EventBuffer: runtime.MaxEventBuffer + 1, OnEvent: onEvent},
		// a unit left out: an idle worker called Redis back to back (about
		// 80,000 commands a second, found by an audit)
		"MaintenanceInterval 1ns": {MaintenanceInterval: 1},
		"IdlePoll 1ns":            {IdlePoll: 1},
		"StuckNoProgress 999µs":   {StuckNoProgress: time.Millisecond - 1},
	}
	for name, o := range cases {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: NewWorker panicked: %v", name, p)
				}
			}()
			if _, err := runtime.NewWorker(shared.Client(t), flow.NewRegistry(), o); !errors.Is(err, runtime.ErrInvalidOptions) {
				t.Errorf("%s: NewWorker: %v, want ErrInvalidOptions", name, err)
			}
		}()
	}
}

// TestOptionsAtBounds: the largest Concurrency, ClaimBatch and
// EventBuffer, and periods of a millisecond, are accepted.
func TestOptionsAtBounds(t *testing.T) {
	t.Parallel()
	o := runtime.Options{
		Concurrency: runtime.MaxConcurrency, ClaimBatch: runtime.MaxClaimBatch,
		EventBuffer: runtime.MaxEventBuffer, OnEvent: func(context.Context, runtime.Event) {},
		MaintenanceInterval: time.Millisecond, IdlePoll: time.Millisecond, StuckNoProgress: time.Millisecond,
	}
	if _, err := runtime.NewWorker(shared.Client(t), flow.NewRegistry(), o); err != nil {
		t.Errorf("NewWorker at the bounds: %v", err)
	}
}

// TestMaxConcurrencyRunsJobs: a worker at MaxConcurrency and
// MaxClaimBatch claims, runs and acks jobs (its batchers' queues are
// capped, not sized by Concurrency alone).
func TestMaxConcurrencyRunsJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	e.startWorker(reg, runtime.Options{Concurrency: runtime.MaxConcurrency, ClaimBatch: runtime.MaxClaimBatch})
	for i := range 3 {
		e.WaitState(e.Enqueue(workArgs{N: i}), flow.StateCompleted)
	}
}

// TestLeaseUnderAMillisecondRefused: a Lease under a millisecond is
// refused, as a KindLease's is. Leases are stored in milliseconds, and
// Lease/3, RenewInterval's default, rounded to 0: the renewal loop ran
// its rounds, each with a heartbeat write, back to back. An explicit
// RenewInterval under a millisecond is refused for the same spin.
func TestLeaseUnderAMillisecondRefused(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]runtime.Options{
		"Lease 2ns":                 {Lease: 2},
		"Lease 999µs":               {Lease: time.Millisecond - time.Microsecond},
		"KindLease 2ns":             {KindLease: map[string]time.Duration{"x": 2}},
		"RenewInterval 1ns":         {RenewInterval: 1},
		"RenewInterval 999µs":       {RenewInterval: time.Millisecond - time.Microsecond},
		"RenewInterval above lease": {Lease: time.Second, RenewInterval: time.Second},
	} {
		if _, err := runtime.NewWorker(shared.Client(t), flow.NewRegistry(), o); !errors.Is(err, runtime.ErrInvalidOptions) {
			t.Errorf("%s: NewWorker: %v, want ErrInvalidOptions", name, err)
		}
	}
	for name, o := range map[string]runtime.Options{
		"Lease 1ms":         {Lease: time.Millisecond},
		"KindLease 1ms":     {KindLease: map[string]time.Duration{"x": time.Millisecond}},
		"RenewInterval 1ms": {RenewInterval: time.Millisecond},
	} {
		if _, err := runtime.NewWorker(shared.Client(t), flow.NewRegistry(), o); err != nil {
			t.Errorf("%s: NewWorker: %v", name, err)
		}
	}
}

// TestKindOptionsWithoutAHandlerWarn: Run logs a warning for each
// KindLease or KindTimeout entry naming a kind the worker has no handler
// for (a misspelt kind would leave that kind's jobs on the default lease
// or timeout, silently), naming the option and the kind, and runs all the
// same; entries for registered kinds draw no warning.
func TestKindOptionsWithoutAHandlerWarn(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	stopped, cancel := context.WithCancel(context.Background())
	cancel() // Run warns first, then returns at once
	cases := map[string]struct {
		o    runtime.Options
		want []string // the warnings' option=... kind=... pairs
	}{
		"KindLease unknown":   {runtime.Options{KindLease: map[string]time.Duration{"work": time.Minute, "wrok": time.Minute}}, []string{"option=KindLease kind=wrok"}},
		"KindTimeout unknown": {runtime.Options{KindTimeout: map[string]time.Duration{"slow": time.Second}}, []string{"option=KindTimeout kind=slow"}},
		"both known":          {runtime.Options{KindLease: map[string]time.Duration{"work": time.Minute}, KindTimeout: map[string]time.Duration{"work": time.Second}}, nil},
	}
	for name, c := range cases {
		var logs strings.Builder
		c.o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		w, err := runtime.NewWorker(shared.Client(t), reg, c.o)
		if err != nil {
			t.Fatalf("%s: NewWorker: %v", name, err)
		}
		if err := w.Run(stopped); err != nil {
			t.Errorf("%s: Run: %v, want nil", name, err)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if strings.Contains(line, "has no handler for") {
				got = append(got, line[strings.Index(line, "option="):])
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: warnings %q, want %q", name, got, c.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], c.want[i]) {
				t.Errorf("%s: warning %q, want %q", name, got[i], c.want[i])
			}
		}
	}
}
