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

// panickyLookup is a child's Handlers whose lookup panics.
type panickyLookup struct{}

func (panickyLookup) Handler(string) (runtime.Handler, bool) { panic("lookup broke") }

// TestLookupPanicIsCrash: a child's Handlers whose lookup panics crashes
// its attempt with a panic reply, as a worker's does (a crash of class
// "panic" with the panic's value): the lookup ran before the handler's
// recovery, and the panic ended the child, which its worker recorded as
// a child_crash with an excerpt of its stderr.
func TestLookupPanicIsCrash(t *testing.T) {
	r := work(context.Background(), panickyLookup{}, &runtime.Attempt{Kind: "k"}, &attempt.State{})
	if r.Outcome != outcomePanic || r.Message != "lookup broke" || len(r.Stack) == 0 {
		t.Errorf("reply %q (message %q, %d bytes of stack), want a panic with the lookup's value and stack", r.Outcome, r.Message, len(r.Stack))
	}
}
