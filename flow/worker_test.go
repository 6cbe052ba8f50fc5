package flow_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

type square struct{ N int }

func (square) Kind() string { return "square" }

// fakeEmail has email's kind but arguments email cannot decode.
type fakeEmail []int

func (fakeEmail) Kind() string { return "email" }

// TestResultsAndHeaders: a RegisterResult handler's result is stored with
// the completed job; headers reach the handler.
func TestResultsAndHeaders(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	reg := flow.NewRegistry()
	var header atomic.Value
	err := flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[square]) (int, error) {
		header.Store(job.Headers["tenant"])
		return job.Args.N * job.Args.N, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c, ns := newClient(t, rdb, reg)
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	res, err := c.Enqueue(context.Background(), square{N: 12}, flow.WithHeaders(map[string]string{"tenant": "acme"}))
	if err != nil {
		t.Fatal(err)
	}
	info := testkit.WaitState(t, c, w.Sig, res.ID, flow.StateCompleted)
	var got int
	if err := info.DecodeResult(&got); err != nil || got != 144 {
		t.Fatalf("result %d, %v", got, err)
	}
	if header.Load() != "acme" {
		t.Fatalf("header %v", header.Load())
	}
}

// TestHandlerOutcomes: each control-flow error a handler returns has its
// documented effect on the job.
func TestHandlerOutcomes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		err     error
		state   string
		reason  string
		attempt int
	}{
		{"snooze", flow.Snooze(time.Hour), flow.StateScheduled, "", 0},
		{"rate limited later", flow.RateLimited(time.Hour), flow.StateScheduled, "", 0},
		{"skip", flow.Skip("not needed"), flow.StateArchived, "skipped", 0},
		{"revoke", flow.Revoke("customer left"), flow.StateCancelled, "revoked", 0},
		{"wrapped skip", fmt.Errorf("wrapped: %w", flow.Skip("x")), flow.StateArchived, "skipped", 0},
		{"ordinary error", errors.New("boom"), flow.StateRetryable, "", 1},
		{"negative snooze is an error", flow.Snooze(-time.Second), flow.StateRetryable, "", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rdb := realRedis(t)
			reg := flow.NewRegistry()
			if err := flow.Register(reg, func(context.Context, *flow.Job[email]) error { return tc.err }); err != nil {
				t.Fatal(err)
			}
			c, ns := newClient(t, rdb, reg)
			w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Backoff: func(int) time.Duration { return time.Hour }}, nil)
			res, err := c.Enqueue(context.Background(), email{To: "x"})
			if err != nil {
				t.Fatal(err)
			}
			info := testkit.WaitState(t, c, w.Sig, res.ID, tc.state)
			if info.Reason != tc.reason || info.Attempt != tc.attempt || info.CrashAttempt != 0 {
				t.Fatalf("job %+v", info)
			}
		})
	}
}

// TestParkedJobs: a job of a kind the worker does not know, and one whose
// arguments cannot be decoded, are archived with a reason instead of
// crash-looping.
func TestParkedJobs(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(context.Context, *flow.Job[email]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	c, ns := newClient(t, rdb, nil) // no registry: any valid kind is accepted
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	unknown, err := c.Enqueue(context.Background(), square{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	garbled, err := c.Enqueue(context.Background(), fakeEmail{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	for id, reason := range map[string]string{unknown.ID: "unknown_kind", garbled.ID: "malformed_payload"} {
		info := testkit.WaitState(t, c, w.Sig, id, flow.StateArchived)
		if info.Reason != reason || info.Attempt != 0 || info.CrashAttempt != 0 {
			t.Fatalf("job %s: %+v", id, info)
		}
	}
}

// TestCluster: a worker on a 3-node Redis Cluster runs jobs of several
// queues and partitions (all keys of a script in one slot).
func TestCluster(t *testing.T) {
	t.Parallel()
	var rdb redis.UniversalClient = env.Cluster.Client()
	t.Cleanup(func() { rdb.Close() })
	reg := flow.NewRegistry()
	var ran atomic.Int64
	if err := flow.Register(reg, func(context.Context, *flow.Job[email]) error { ran.Add(1); return nil }); err != nil {
		t.Fatal(err)
	}
	ns := redistest.NewNamespace(t)
	parts := map[string]int{"default": 3, "mail": 2}
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: parts})
	if err != nil {
		t.Fatal(err)
	}
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Partitions: parts, Queues: map[string]int{"default": 1, "mail": 1}}, nil)
	var items []flow.Item
	for i := range 60 {
		q := "default"
		if i%2 == 0 {
			q = "mail"
		}
		items = append(items, flow.Item{Args: email{To: fmt.Sprint(i)}, Opts: []flow.EnqueueOption{flow.WithQueue(q)}})
	}
	res, err := c.EnqueueMany(context.Background(), items...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		testkit.WaitState(t, c, w.Sig, r.ID, flow.StateCompleted)
	}
	if ran.Load() != 60 {
		t.Fatalf("ran %d jobs, want 60", ran.Load())
	}
}
