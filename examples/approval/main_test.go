package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
)

// syncBuffer is a bytes.Buffer the worker's goroutines can share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newRedis(t *testing.T) redis.UniversalClient {
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestDemo runs the demo with a day of 2s, wide enough for a loaded
// machine to answer exp-3 between its reminder and its give-up: exp-1
// approved by a signal, exp-2 reminded then escalated, exp-3 reminded
// then rejected.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out syncBuffer
	got, err := demo(ctx, newRedis(t), &out, 2*time.Second)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{"expenses:0:exp-1", Outcome{Status: "approved", By: "ada"}},
		{"expenses:0:exp-2", Outcome{Status: "escalated", By: "finance", Reminded: true}},
		{"expenses:0:exp-3", Outcome{Status: "rejected", By: "ada", Note: "over the 500 EUR limit", Reminded: true}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d results, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	// Each step ran once: one request line per expense, one reminder each
	// for exp-2 and exp-3.
	for _, s := range []struct {
		text string
		n    int
	}{{" asks ada for ", 3}, {"reminder to ada", 2}, {"approved by", 1}, {"rejected by", 1}, {"escalated", 1}} {
		if n := strings.Count(out.String(), s.text); n != s.n {
			t.Errorf("%q printed %d times, want %d", s.text, n, s.n)
		}
	}
}

// TestWorkerDownDuringTheWait stops the worker while an expense waits,
// sends the decision while no worker runs, and starts another worker
// with a different day: the kept signal is taken, the timers keep the
// wake times fixed by the first wait, and no finished step runs again.
func TestWorkerDownDuringTheWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := newRedis(t)
	var out syncBuffer
	start := func(day time.Duration) (stop func()) {
		a := &approvals{day: day, out: &out}
		reg, err := a.registry()
		if err != nil {
			t.Fatal(err)
		}
		w, err := newWorker(rdb, reg, "approval-test")
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(runCtx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	reg, err := (&approvals{}).registry()
	if err != nil {
		t.Fatal(err)
	}
	client, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: "approval-test", Registry: reg})
	if err != nil {
		t.Fatal(err)
	}

	stop := start(time.Hour)
	res, err := client.Enqueue(ctx, Expense{By: "grace", Cents: 12900, What: "train", Approver: "ada"},
		flow.WithQueue(queue), flow.WithID("exp-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, client, res.ID, func(j *flow.JobInfo) bool { return len(j.AwaitingSignals) > 0 }); err != nil {
		t.Fatal(err)
	}
	stop()

	before, err := client.Job(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if before.State != flow.StateScheduled || len(before.Timers) != 2 || before.LeaseID != "" {
		t.Fatalf("waiting job: state %s, timers %+v, lease %q; want scheduled, 2 timers, none", before.State, before.Timers, before.LeaseID)
	}
	wake := map[string]time.Time{}
	for _, tm := range before.Timers {
		wake[tm.Name] = tm.Wake
	}
	if d := wake["give-up"].Sub(wake["remind"]); d != 2*time.Hour {
		t.Fatalf("give-up wakes %s after remind, want 2 days (2h)", d)
	}

	if err := client.Signal(ctx, res.ID, "decision", Decision{Approved: true, By: "ada"}); err != nil {
		t.Fatal(err)
	}
	j, err := client.Job(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Signals) != 1 || j.Signals[0].Name != "decision" {
		t.Fatalf("signal sent while no worker runs: kept %+v, want decision", j.Signals)
	}

	stop = start(time.Minute) // a new "day": the timers are fixed already
	defer stop()
	o, err := flow.Result[Outcome](ctx, client, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Outcome{Status: "approved", By: "ada"}); o != want {
		t.Fatalf("outcome %+v, want %+v", o, want)
	}
	if n := strings.Count(out.String(), " asks ada for "); n != 1 {
		t.Errorf("the record step ran %d times, want 1\n%s", n, out.String())
	}
}
