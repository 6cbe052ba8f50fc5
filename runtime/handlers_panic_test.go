package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
)

// panickyHandlers is a Handlers of the caller's whose lookup panics for
// one kind and finds the others in a registry.
type panickyHandlers struct {
	reg  *flow.Registry
	kind string
}

func (p panickyHandlers) Handler(kind string) (runtime.Handler, bool) {
	if kind == p.kind {
		panic("lookup broke")
	}
	return p.reg.Handler(kind)
}

type lookupArgs struct{}

func (lookupArgs) Kind() string { return "lookup" }

// TestHandlersPanicIsTheAttemptsCrash: a Handlers whose lookup panics for
// a kind crashes that kind's attempts, as a handler's panic does, and the
// worker goes on with the other kinds (a helper's audit: the panic ended
// the worker's process, taking every job in flight with it).
func TestHandlersPanicIsTheAttemptsCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := register(t, func(context.Context, *flow.Job[obsArgs]) error { return nil })
	// two crashes: the second claim asks whether the suspect's kind is
	// Contained, which looks its handler up too
	e.startWorker(panickyHandlers{reg: reg, kind: lookupArgs{}.Kind()}, runtime.Options{CrashLimit: 2, CrashDelay: time.Millisecond})
	bad := e.Enqueue(lookupArgs{})
	good := e.Enqueue(obsArgs{})
	if j := e.WaitState(bad, flow.StateQuarantined); j.LastError != "panic: lookup broke" {
		t.Errorf("the lookup's job: last error %q, want the panic", j.LastError)
	}
	e.WaitState(good, flow.StateCompleted)
}
