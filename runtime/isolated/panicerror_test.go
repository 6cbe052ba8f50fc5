package isolated

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestReturnedPanicErrorIsCrash: a child's handler that returns a
// *runtime.PanicError (or an error wrapping one) crashes its attempt, as
// it does in a worker (runtime.PanicError's doc): the reply is a panic,
// which the worker records as a crash of class "panic", not an ordinary
// error that spends an attempt.
func TestReturnedPanicErrorIsCrash(t *testing.T) {
	pe := &runtime.PanicError{Value: "boom", Stack: []byte("the stack")}
	for _, ret := range []error{pe, fmt.Errorf("sub-task: %w", pe)} {
		h := runtime.HandlerFunc(func(context.Context, *runtime.Attempt) ([]byte, error) { return nil, ret })
		r := work(context.Background(), kindHandlers{h}, &runtime.Attempt{Kind: "k"}, &attempt.State{})
		if r.Outcome != outcomePanic || r.Message != "boom" || string(r.Stack) != "the stack" {
			t.Errorf("%v: reply %q (message %q, stack %q), want a panic with the PanicError's value and stack",
				ret, r.Outcome, r.Message, r.Stack)
		}
		_, err := (&session{}).decide(&r)
		var ce *sluicetype.CrashError
		if !errors.As(err, &ce) || ce.Reason != "panic" {
			t.Errorf("%v: the worker decides %v, want a *CrashError of class panic", ret, err)
		}
	}
}
