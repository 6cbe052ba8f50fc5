package flow_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// valueKind has a value-receiver Kind, so *valueKind is a job type too.
type valueKind struct{ N int }

func (valueKind) Kind() string { return "value_kind" }

// pointerKind has a pointer-receiver Kind.
type pointerKind struct{ N int }

func (*pointerKind) Kind() string { return "pointer_kind" }

// TestPointerJobTypes: a pointer job type registers and runs (Register
// asked a nil pointer its kind: a panic for a value-receiver Kind), and a
// nil pointer as a job's arguments is bad input (ErrInvalid), never a
// panic nor a job without arguments.
func TestPointerJobTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := realRedis(t)
	reg := flow.NewRegistry()
	got := make(chan int, 1)
	testkit.Must(t, flow.Register(reg, func(_ context.Context, j *flow.Job[*valueKind]) error {
		got <- j.Args.N
		return nil
	}))
	c, ns := newClient(t, rdb, reg)
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	if _, err := c.Enqueue(ctx, &valueKind{N: 7}); err != nil {
		t.Fatal(err)
	}
	if n := testkit.Recv(t, got, "the job's run"); n != 7 {
		t.Errorf("the handler got N=%d, want 7", n)
	}
	for name, args := range map[string]flow.Args{"value receiver": (*valueKind)(nil), "pointer receiver": (*pointerKind)(nil)} {
		if _, err := c.Enqueue(ctx, args); !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("Enqueue of a nil pointer (%s): %v, want ErrInvalid", name, err)
		}
		if _, err := c.EnqueueMany(ctx, flow.Item{Args: valueKind{N: 1}}, flow.Item{Args: args}); !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("EnqueueMany with a nil pointer (%s): %v, want ErrInvalid", name, err)
		}
	}
}
