package step_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/flowtest"
	"github.com/sluicehq/sluice/internal/mpack"
)

type resultKid struct{}

func (resultKid) Kind() string { return "result-kid" }

type stringerParent struct{}

func (stringerParent) Kind() string { return "stringer-parent" }

type intParent struct{}

func (intParent) Kind() string { return "int-parent" }

// kidOut is what the child returns; stringerOut has a non-empty interface
// field, which msgpack encodes but panics on decoding into.
type kidOut struct{ V string }

type stringerOut struct{ V fmt.Stringer }

// kidRegistry registers the child, which returns kidOut.
func kidRegistry(t *testing.T) *flow.Registry {
	t.Helper()
	reg := flow.NewRegistry()
	if err := flow.RegisterResult(reg, func(context.Context, *flow.Job[resultKid]) (kidOut, error) {
		return kidOut{V: "x"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestCallResultUndecodableParks: a parent that calls a child as a type
// its result does not decode into is parked at once (archived, reason
// child_result, ErrChildResult in its error), charged no crash and run no
// second time: every attempt would meet it. A helper's audit found a type
// msgpack panics on crashed every attempt into quarantine, and a plain
// mismatch (a struct into an int) retried the parent until its attempts
// ran out.
func TestCallResultUndecodableParks(t *testing.T) {
	t.Parallel()
	t.Run("a type msgpack panics on", func(t *testing.T) {
		t.Parallel()
		reg := kidRegistry(t)
		register(t, reg, func(ctx context.Context, _ *flow.Job[stringerParent]) error {
			_, err := flow.Call[stringerOut](ctx, "call", resultKid{})
			return err
		})
		checkParked(t, flowtest.New(t, reg).Run(stringerParent{}))
	})
	t.Run("another type", func(t *testing.T) {
		t.Parallel()
		reg := kidRegistry(t)
		register(t, reg, func(ctx context.Context, _ *flow.Job[intParent]) error {
			_, err := flow.Call[int](ctx, "call", resultKid{})
			return err
		})
		checkParked(t, flowtest.New(t, reg).Run(intParent{}))
	})
}

func checkParked(t *testing.T, res *flowtest.Result) {
	t.Helper()
	j := res.Job
	if j.State != flow.StateArchived || j.Reason != "child_result" || j.CrashAttempt != 0 || res.Attempts > 3 ||
		!strings.Contains(j.LastError, flow.ErrChildResult.Error()) {
		t.Fatalf("parent: %s (reason %q), %d crashes, %d handler calls, last error %q; want archived (child_result), no crash, no retry (at most the spawn, a wait and the join)",
			j.State, j.Reason, j.CrashAttempt, res.Attempts, j.LastError)
	}
}

// TestResultUndecodableIsAnError: flow.Result, and JobInfo.DecodeResult,
// of a completed job into a type msgpack panics on answer an error
// (mpack.ErrUndecodable) in the caller's process, where they panicked.
func TestResultUndecodableIsAnError(t *testing.T) {
	t.Parallel()
	h := flowtest.New(t, kidRegistry(t))
	j := h.Run(resultKid{}).Job
	if j.State != flow.StateCompleted {
		t.Fatalf("child: %s", j.State)
	}
	if _, err := flow.Result[stringerOut](context.Background(), h.Client, j.ID); !errors.Is(err, mpack.ErrUndecodable) {
		t.Fatalf("flow.Result into a fmt.Stringer field: %v, want ErrUndecodable", err)
	}
	var v stringerOut
	if err := j.DecodeResult(&v); !errors.Is(err, mpack.ErrUndecodable) {
		t.Fatalf("DecodeResult into a fmt.Stringer field: %v, want ErrUndecodable", err)
	}
}
