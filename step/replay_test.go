package step_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/flowtest"
	"github.com/sluicehq/sluice/step"
)

type replayQuote struct{}

func (replayQuote) Kind() string { return "replay_quote" }

// TestResumedStepSeesWhatTheFirstSaw: a step's first run returns the
// value every later attempt decodes from its checkpoint, not fn's value
// in memory: a number in a map[string]any is read back as a small
// integer type, and code after the step that branches on it must decide
// the same way before and after a sleep. Before, the first attempt saw
// int and the resumed one uint8 (found by an audit).
func TestResumedStepSeesWhatTheFirstSaw(t *testing.T) {
	reg := flow.NewRegistry()
	var seen []string
	register(t, reg, func(ctx context.Context, _ *flow.Job[replayQuote]) error {
		q, err := step.Run(ctx, "quote", func(context.Context) (map[string]any, error) {
			return map[string]any{"cents": 250}, nil
		})
		if err != nil {
			return err
		}
		seen = append(seen, fmt.Sprintf("%T", q["cents"]))
		return step.Sleep(ctx, "nap", time.Minute)
	})
	h := flowtest.New(t, reg)
	j := h.Run(replayQuote{}).Job
	h.Clock.Advance(time.Minute)
	if j = h.Resume(j.ID, 10*time.Second).Job; j.State != flow.StateCompleted {
		t.Fatalf("resumed: %s (%s)", j.State, j.LastError)
	}
	if len(seen) != 2 || seen[0] != seen[1] {
		t.Fatalf("the attempts saw %v, want the same type twice", seen)
	}
}

type replayAddr struct{}

func (replayAddr) Kind() string { return "replay_addr" }

type resolved struct{ Addr fmt.Stringer }

// TestStepResultThatDoesNotDecode: a step result that encodes but cannot
// be decoded back into its type (a non-empty interface field) is refused
// before its checkpoint is committed, and the job parked (step_result),
// as for a result that does not encode. Before, the first attempt
// committed it and every later one panicked in the decoder, until the
// job was quarantined at its crash limit (found by an audit).
func TestStepResultThatDoesNotDecode(t *testing.T) {
	reg := flow.NewRegistry()
	register(t, reg, func(ctx context.Context, _ *flow.Job[replayAddr]) error {
		if _, err := step.Run(ctx, "resolve", func(context.Context) (resolved, error) {
			return resolved{Addr: netip.MustParseAddr("10.0.0.7")}, nil
		}); err != nil {
			return err
		}
		return step.Sleep(ctx, "nap", time.Minute)
	})
	h := flowtest.New(t, reg)
	j := h.Run(replayAddr{}).Job
	if j.State != flow.StateArchived || j.Reason != "step_result" || len(j.Steps) != 0 || j.CrashAttempt != 0 {
		t.Fatalf("after the first attempt: %s (%s), %d steps, %d crashes: %s; want archived step_result, nothing checkpointed",
			j.State, j.Reason, len(j.Steps), j.CrashAttempt, j.LastError)
	}
}

type replayUntil struct{}

func (replayUntil) Kind() string { return "replay_until" }

// TestSleepUntilNeverEarly: SleepUntil a time a fraction of a millisecond
// past a whole one does not return before it: wake times are kept in
// whole milliseconds, rounded up. Before, they were rounded down, and the
// sleep returned up to a millisecond early by the store's clock (found by
// an audit).
func TestSleepUntilNeverEarly(t *testing.T) {
	reg := flow.NewRegistry()
	var woke, until time.Time
	var h *flowtest.Harness
	register(t, reg, func(ctx context.Context, _ *flow.Job[replayUntil]) error {
		if err := step.SleepUntil(ctx, "until", until); err != nil {
			return err
		}
		woke = h.Clock.Now()
		return nil
	})
	h = flowtest.New(t, reg)
	until = h.Clock.Now().Add(time.Hour + 900*time.Microsecond)
	j := h.Run(replayUntil{}).Job
	h.Clock.Advance(time.Hour)
	if j = h.Resume(j.ID, 10*time.Second).Job; j.State == flow.StateCompleted && woke.Before(until) {
		t.Fatalf("SleepUntil(%v) returned at %v, %v early", until, woke, until.Sub(woke))
	}
	h.Clock.Advance(time.Millisecond)
	if j = h.Resume(j.ID, 10*time.Second).Job; j.State != flow.StateCompleted || woke.Before(until) {
		t.Fatalf("a millisecond later: %s, woke at %v (until %v)", j.State, woke, until)
	}
}
