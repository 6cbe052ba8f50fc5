package runtime_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/step"
)

// TestUndecodableJobParkedAlone: a claimed job whose hash holds a field
// the worker cannot decode (one the claim script does not check) is
// archived as malformed, and the jobs claimed with it still run.
func TestUndecodableJobParkedAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	ran := make(chan int, 10)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(_ context.Context, job *flow.Job[workArgs]) error {
		ran <- job.Args.N
		return nil
	}))
	var ids []string
	for i := range 3 {
		ids = append(ids, e.Enqueue(workArgs{N: i}))
	}
	ref, ok := keys.ParseRef(e.NS, ids[1])
	if !ok {
		t.Fatalf("bad job ID %q", ids[1])
	}
	testkit.Must(t, e.RDB.HSet(ctx, ref.Job(ref.Local), keys.FieldPriority, "high").Err()) // not a number
	e.startWorker(reg, runtime.Options{ClaimBatch: 10})
	// First: WaitState skips the signals of other jobs (and the client
	// cannot decode this one to read its state).
	if s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == ids[1] }); s.State != flow.StateArchived {
		t.Errorf("the undecodable job was settled %+v, want archived", s)
	}
	if h := e.rawJob(ids[1]); store.StateName(h[keys.FieldState]) != "archived" || h[keys.FieldReason] != "malformed" {
		t.Errorf("the undecodable job: state %q, reason %q; want archived as malformed", store.StateName(h[keys.FieldState]), h[keys.FieldReason])
	}
	for _, id := range []string{ids[0], ids[2]} {
		e.WaitState(id, flow.StateCompleted)
	}
	close(ran)
	for n := range ran {
		if n == 1 {
			t.Error("the undecodable job's handler ran")
		}
	}
}

type corruptArgs struct {
	N    int
	Fail bool // the first attempt returns an error (an error list is written)
}

func (corruptArgs) Kind() string { return "corrupt" }

// TestCorruptKeysAreTheirJobsAlone: a worker running a batch of two-step
// workflows, some of which fail once, among which one job's key holds no
// hash, one's fence is not a whole number, one's error list is no list and
// one's checkpoints key is no hash, archives or retries each of those
// alone and completes every other job: none is lost, none is left
// running. Before, each of these failed the batched claim, ack or
// checkpoint call it was in (after Redis had kept part of its writes),
// for every job of the batch, on every try.
func TestCorruptKeysAreTheirJobsAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	var failed sync.Map
	reg := flow.NewRegistry()
	noop := func(context.Context) error { return nil }
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[corruptArgs]) error {
		for _, name := range []string{"one", "two"} {
			if err := step.Do(ctx, name, noop); err != nil {
				return err
			}
		}
		if _, again := failed.LoadOrStore(job.ID, true); job.Args.Fail && !again {
			return errors.New("first attempt fails")
		}
		return nil
	}))
	const jobs = 12
	ids := make([]string, jobs)
	for i := range ids {
		ids[i] = e.Enqueue(corruptArgs{N: i, Fail: i%3 == 0}, flow.WithMaxAttempts(2))
	}
	key := func(i int, of func(keys.Ref) string) string {
		ref, ok := keys.ParseRef(e.NS, ids[i])
		if !ok {
			t.Fatalf("bad job ID %q", ids[i])
		}
		return of(ref)
	}
	job := func(r keys.Ref) string { return r.Job(r.Local) }
	const noHash, fraction, errList, steps = 1, 2, 3, 4 // the victims, by index (3 fails once)
	testkit.Must(t, e.RDB.Set(ctx, key(noHash, job), "overwritten", 0).Err())
	testkit.Must(t, e.RDB.HSet(ctx, key(fraction, job), keys.FieldFence, "1.5").Err())
	testkit.Must(t, e.RDB.Set(ctx, key(errList, func(r keys.Ref) string { return r.Errors(r.Local) }), "overwritten", 0).Err())
	testkit.Must(t, e.RDB.Set(ctx, key(steps, func(r keys.Ref) string { return r.Steps(r.Local) }), "overwritten", 0).Err())
	e.startWorker(reg, runtime.Options{ClaimBatch: jobs, Backoff: func(int) time.Duration { return 0 }})

	for _, i := range []int{noHash, fraction} { // the client cannot read these: their raw fields
		if s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == ids[i] }); s.State != flow.StateArchived {
			t.Errorf("job %d settled %+v, want archived", i, s)
		}
		if h := e.rawJob(ids[i]); store.StateName(h[keys.FieldState]) != "archived" || h[keys.FieldReason] != "malformed" {
			t.Errorf("job %d: state %q, reason %q; want archived as malformed", i, store.StateName(h[keys.FieldState]), h[keys.FieldReason])
		}
	}
	// its checkpoints refused every attempt: archived when they ran out
	if info := e.WaitState(ids[steps], flow.StateArchived); info.Reason != "attempts_exhausted" {
		t.Errorf("the job with a corrupt checkpoints key: archived for %q, want attempts_exhausted", info.Reason)
	}
	for i := range jobs {
		if i == noHash || i == fraction || i == steps {
			continue
		}
		if info := e.WaitState(ids[i], flow.StateCompleted); i == errList && info.Attempt != 1 {
			t.Errorf("the job with a corrupt error list completed after %d failed attempts, want 1", info.Attempt)
		}
	}
	stats, err := admin.New(e.Client).QueueStats(ctx, "default", time.Minute)
	testkit.Must(t, err)
	if d := stats.Depth; d[flow.StateRunning] != 0 || d[flow.StateAvailable] != 0 || d[flow.StateRetryable] != 0 ||
		d[flow.StateCompleted] != jobs-3 || d[flow.StateArchived] != 3 {
		t.Errorf("depth %v, want %d completed and 3 archived", d, jobs-3)
	}
}
