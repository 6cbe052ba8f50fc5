package step_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/flow/flowtest"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

type nap struct{}

func (nap) Kind() string { return "nap" }

// TestSleep: the job is suspended until its wake time (store time, fixed
// on the first run), holding no lease and spending no attempt; it then
// resumes with its finished steps skipped.
func TestSleep(t *testing.T) {
	reg := flow.NewRegistry()
	var before, after atomic.Int32
	register(t, reg, func(ctx context.Context, _ *flow.Job[nap]) error {
		if err := step.Do(ctx, "before", func(context.Context) error { before.Add(1); return nil }); err != nil {
			return err
		}
		if err := step.Sleep(ctx, "nap", time.Hour); err != nil {
			return err
		}
		return step.Do(ctx, "after", func(context.Context) error { after.Add(1); return nil })
	})
	h := flowtest.New(t, reg)
	start := h.Clock.Now()
	res := h.Run(nap{})
	j := res.Job
	if j.State != flow.StateScheduled || !j.RunAt.Equal(start.Add(time.Hour)) || j.LeaseID != "" || j.Attempt != 0 {
		t.Fatalf("sleeping job: state %s, due %v (want %v), lease %q, attempt %d", j.State, j.RunAt, start.Add(time.Hour), j.LeaseID, j.Attempt)
	}
	if len(j.Timers) != 1 || j.Timers[0].Name != "nap" || !j.Timers[0].Wake.Equal(start.Add(time.Hour)) || !j.Suspended {
		t.Fatalf("timers: %+v, suspended %v", j.Timers, j.Suspended)
	}
	page, err := admin.New(h.Client).ListJobs(context.Background(), admin.ListOptions{Queue: "default", State: flow.StateScheduled})
	if err != nil || len(page.Jobs) != 1 || !page.Jobs[0].Suspended || !page.Jobs[0].RunAt.Equal(start.Add(time.Hour)) {
		t.Fatalf("listed: %+v %v; want the job, suspended, due at its wake time", page.Jobs, err)
	}
	h.Clock.Advance(59 * time.Minute)
	if j = h.Resume(j.ID, 10*time.Second).Job; j.State != flow.StateScheduled || after.Load() != 0 {
		t.Fatalf("before its wake time: %s, after ran %d times", j.State, after.Load())
	}
	h.Clock.Advance(time.Minute)
	if j = h.Resume(j.ID, 10*time.Second).Job; j.State != flow.StateCompleted {
		t.Fatalf("after its wake time: %s (%s)", j.State, j.LastError)
	}
	if before.Load() != 1 || after.Load() != 1 || j.Attempt != 0 {
		t.Fatalf("before ran %d, after %d times, attempt %d; want 1, 1, 0", before.Load(), after.Load(), j.Attempt)
	}
}

type approval struct{ Amount int }

func (approval) Kind() string { return "approval" }

type decision struct {
	OK bool
	By string
}

// approve waits for a decision up to 3 days and sends a reminder after 1
// day, in two rounds of Select that share the give-up timer.
func approve(reminders *atomic.Int32) func(context.Context, *flow.Job[approval]) (string, error) {
	return func(ctx context.Context, _ *flow.Job[approval]) (string, error) {
		for round, remind := range []bool{true, false} {
			sel := step.Select(ctx, []string{"wait-1", "wait-2"}[round])
			got := step.OnSignal[decision](sel, "decision")
			var reminder *step.Case
			if remind {
				reminder = sel.After("remind", 24*time.Hour)
			}
			sel.After("give-up", 72*time.Hour)
			if err := sel.Wait(); err != nil {
				return "", err
			}
			switch {
			case got.Fired():
				d := got.Value()
				if d.OK {
					return "approved by " + d.By, nil
				}
				return "rejected by " + d.By, nil
			case reminder != nil && reminder.Fired():
				if err := step.Do(ctx, "remind", func(context.Context) error { reminders.Add(1); return nil }); err != nil {
					return "", err
				}
			default:
				return "escalated", nil
			}
		}
		return "escalated", nil
	}
}

func runApproval(t *testing.T) (*flowtest.Harness, *atomic.Int32, *flow.JobInfo) {
	t.Helper()
	reg := flow.NewRegistry()
	reminders := &atomic.Int32{}
	if err := flow.RegisterResult(reg, approve(reminders)); err != nil {
		t.Fatal(err)
	}
	h := flowtest.New(t, reg)
	j := h.Run(approval{Amount: 120}).Job
	if j.State != flow.StateScheduled || len(j.AwaitingSignals) != 1 || j.AwaitingSignals[0] != "decision" {
		t.Fatalf("waiting job: state %s, awaiting %v", j.State, j.AwaitingSignals)
	}
	return h, reminders, j
}

func resultOf(t *testing.T, j *flow.JobInfo) string {
	t.Helper()
	var s string
	if j.State != flow.StateCompleted {
		t.Fatalf("job %s: %s (%s)", j.ID, j.State, j.LastError)
	}
	if err := j.DecodeResult(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSelectSignal: a signal wakes the waiting job at once and is taken
// with the step's checkpoint.
func TestSelectSignal(t *testing.T) {
	h, reminders, j := runApproval(t)
	h.Clock.Advance(time.Hour)
	if err := h.Client.Signal(context.Background(), j.ID, "decision", decision{OK: true, By: "ada"}); err != nil {
		t.Fatal(err)
	}
	if j = readJob(t, h, j.ID); j.State != flow.StateAvailable {
		t.Fatalf("signalled job: %s, want available", j.State)
	}
	j = h.Resume(j.ID, 10*time.Second).Job
	if r := resultOf(t, j); r != "approved by ada" || reminders.Load() != 0 || len(j.Signals) != 0 {
		t.Fatalf("result %q, reminders %d, signals left %v", r, reminders.Load(), j.Signals)
	}
}

// TestSelectTimers: the reminder fires after a day, the give-up timer
// keeps its first wake time across the two rounds, and a signal sent after
// the give-up fired is not taken.
func TestSelectTimers(t *testing.T) {
	h, reminders, j := runApproval(t)
	start := j.Created
	if !j.RunAt.Equal(start.Add(24 * time.Hour)) {
		t.Fatalf("due %v, want the reminder at %v", j.RunAt, start.Add(24*time.Hour))
	}
	h.Clock.Advance(24 * time.Hour)
	j = h.Resume(j.ID, 10*time.Second).Job
	if reminders.Load() != 1 || j.State != flow.StateScheduled || !j.RunAt.Equal(start.Add(72*time.Hour)) {
		t.Fatalf("after a day: reminders %d, %s due %v, want give-up at %v", reminders.Load(), j.State, j.RunAt, start.Add(72*time.Hour))
	}
	h.Clock.Advance(48 * time.Hour)
	j = h.Resume(j.ID, 10*time.Second).Job
	if r := resultOf(t, j); r != "escalated" || reminders.Load() != 1 {
		t.Fatalf("after three days: %q, reminders %d", r, reminders.Load())
	}
	var se *sluicetype.StateError
	if err := h.Client.Signal(context.Background(), j.ID, "decision", decision{OK: true}); !errors.As(err, &se) || se.State != flow.StateCompleted {
		t.Fatalf("a signal to the finished job: %v", err)
	}
}

// TestSignalBeforeWait: a signal sent before the job reaches its wait is
// kept and taken there, without a suspension; a second wait for the same
// signal name does not take it again.
func TestSignalBeforeWait(t *testing.T) {
	reg := flow.NewRegistry()
	var got []string
	if err := flow.RegisterResult(reg, func(ctx context.Context, _ *flow.Job[approval]) (int, error) {
		d, ok, err := step.WaitSignal[decision](ctx, "decision", time.Hour)
		if err != nil {
			return 0, err
		}
		got = append(got, d.By)
		_, ok2, err := step.WaitSignal[decision](ctx, "again", time.Hour)
		if err != nil {
			return 0, err
		}
		if !ok || ok2 {
			return 0, errors.New("wrong waits")
		}
		return len(got), nil
	}); err != nil {
		t.Fatal(err)
	}
	h := flowtest.New(t, reg)
	ctx := context.Background()
	res, err := h.Client.Enqueue(ctx, approval{}, flow.WithDelay(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Client.Signal(ctx, res.ID, "decision", decision{By: "early"}); err != nil {
		t.Fatal(err)
	}
	if j := readJob(t, h, res.ID); len(j.Signals) != 1 || j.Signals[0].Name != "decision" {
		t.Fatalf("kept signals: %+v", j.Signals)
	}
	h.Clock.Advance(time.Minute)
	j := h.Resume(res.ID, 10*time.Second).Job
	if j.State != flow.StateScheduled || len(j.AwaitingSignals) != 1 || j.AwaitingSignals[0] != "again" || len(j.Signals) != 0 {
		t.Fatalf("after the first wait: %s awaiting %v, kept %+v", j.State, j.AwaitingSignals, j.Signals)
	}
	h.Clock.Advance(time.Hour)
	j = h.Resume(res.ID, 10*time.Second).Job
	if j.State != flow.StateCompleted || len(got) < 1 || got[0] != "early" {
		t.Fatalf("%s, decisions %v (%s)", j.State, got, j.LastError)
	}
}

// TestSignalTakenOnceAcrossCrash: an attempt that crashes right after
// taking a signal leaves it taken; the next attempt replays the decision.
func TestSignalTakenOnceAcrossCrash(t *testing.T) {
	reg := flow.NewRegistry()
	var calls atomic.Int32
	if err := flow.RegisterResult(reg, func(ctx context.Context, _ *flow.Job[approval]) (string, error) {
		calls.Add(1)
		d, ok, err := step.WaitSignal[decision](ctx, "decision", 0)
		if err != nil || !ok {
			return "", err
		}
		return d.By, nil
	}); err != nil {
		t.Fatal(err)
	}
	h := flowtest.New(t, reg)
	ctx := context.Background()
	j := h.Run(approval{}, flowtest.WithEnqueueOptions(flow.WithDelay(time.Minute)), flowtest.CrashAfterStep(1)).Job
	if err := h.Client.Signal(ctx, j.ID, "decision", decision{By: "bob"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Client.Signal(ctx, j.ID, "decision", decision{By: "carol"}); err != nil {
		t.Fatal(err)
	}
	h.Clock.Advance(time.Minute)
	j = h.Resume(j.ID, 10*time.Second).Job
	if r := resultOf(t, j); r != "bob" || j.CrashAttempt != 1 || len(j.Signals) != 1 || j.Signals[0].Seq != 2 {
		t.Fatalf("result %q, crashes %d, kept %+v; want bob, 1, carol's kept", r, j.CrashAttempt, j.Signals)
	}
}

// TestCancelSuspended: an operator cancels a sleeping job.
func TestCancelSuspended(t *testing.T) {
	h, _, j := runApproval(t)
	if _, err := admin.New(h.Client).CancelJob(context.Background(), j.ID); err != nil {
		t.Fatal(err)
	}
	if j = readJob(t, h, j.ID); j.State != flow.StateCancelled {
		t.Fatalf("cancelled suspended job: %s", j.State)
	}
}

// TestWaitsOnRealRedis runs the approval on a redis-server and the
// cluster with a real worker: suspended, signalled, completed.
func TestWaitsOnRealRedis(t *testing.T) {
	for _, b := range []struct {
		name string
		env  func(t *testing.T, reg *flow.Registry) *env
	}{
		{"redis", func(t *testing.T, reg *flow.Registry) *env { return newEnv(t, shared.Server.Client(), reg) }},
		{"cluster", func(t *testing.T, reg *flow.Registry) *env { return newEnv(t, shared.Cluster.Client(), reg) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			reg := flow.NewRegistry()
			reminders := &atomic.Int32{}
			if err := flow.RegisterResult(reg, approve(reminders)); err != nil {
				t.Fatal(err)
			}
			e := b.env(t, reg)
			id := e.Enqueue(approval{})
			j := e.WaitState(id, flow.StateScheduled)
			if len(j.AwaitingSignals) != 1 {
				t.Fatalf("awaiting %v", j.AwaitingSignals)
			}
			if err := e.Client.Signal(context.Background(), id, "decision", decision{OK: false, By: "eve"}); err != nil {
				t.Fatal(err)
			}
			if r := resultOf(t, e.WaitState(id, flow.StateCompleted)); r != "rejected by eve" {
				t.Fatalf("result %q", r)
			}
		})
	}
}

func readJob(t *testing.T, h *flowtest.Harness, id string) *flow.JobInfo {
	t.Helper()
	j, err := h.Client.Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestSignalKeyRetried: a Signal retried with its key after an uncertain
// failure keeps one signal, so two waits for the same name do not both
// take it (the chaos suite found the retry without a key counted twice).
func TestSignalKeyRetried(t *testing.T) {
	reg := flow.NewRegistry()
	if err := flow.RegisterResult(reg, func(ctx context.Context, _ *flow.Job[approval]) (int, error) {
		votes := 0
		for _, round := range []string{"round1", "round2"} {
			s := step.Select(ctx, round)
			vote := step.OnSignal[decision](s, "approve")
			s.After(round+".limit", time.Hour)
			if err := s.Wait(); err != nil {
				return 0, err
			}
			if vote.Fired() {
				votes++
			}
		}
		return votes, nil
	}); err != nil {
		t.Fatal(err)
	}
	h := flowtest.New(t, reg)
	ctx := context.Background()
	j := h.Run(approval{}).Job
	for range 2 { // the same logical signal, sent again
		if err := h.Client.Signal(ctx, j.ID, "approve", decision{OK: true}, flow.WithSignalKey("vote-ada")); err != nil {
			t.Fatal(err)
		}
	}
	j = h.Resume(j.ID, 10*time.Second).Job
	if j.State != flow.StateScheduled || len(j.Signals) != 0 {
		t.Fatalf("after the first round: %s, kept %+v; want waiting in round 2 with nothing kept", j.State, j.Signals)
	}
	h.Clock.Advance(time.Hour)
	var votes int
	if j = h.Resume(j.ID, 10*time.Second).Job; j.State != flow.StateCompleted || j.DecodeResult(&votes) != nil || votes != 1 {
		t.Fatalf("%s with %d votes, want completed with 1", j.State, votes)
	}
	// the caller's retry, once the job it woke has finished (the signal
	// audit): answered as delivered while the job is kept; a signal it
	// never took is refused
	if err := h.Client.Signal(ctx, j.ID, "approve", decision{OK: true}, flow.WithSignalKey("vote-ada")); err != nil {
		t.Fatalf("a keyed retry after the job finished: %v", err)
	}
	var se *sluicetype.StateError
	if err := h.Client.Signal(ctx, j.ID, "approve", decision{OK: true}, flow.WithSignalKey("vote-bob")); !errors.As(err, &se) {
		t.Fatalf("a new signal to a finished job: %v, want a StateError", err)
	}
}
