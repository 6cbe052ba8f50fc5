package admin_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/sticky"
)

// TestLongIDErrorsAreShort: every call that takes a job ID answers an ID
// of 100 kB (a caller's bug: a payload where an ID goes) with an error,
// in the return or a batch's report, of a few hundred bytes at most: an
// error is logged and sent on, and one that quoted the ID in full was
// itself 100 kB (flow.Client.Signal did, for an ID of no job).
func TestLongIDErrorsAreShort(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	id := "default:0:" + strings.Repeat("x", 100_000)
	from := time.Now()
	calls := map[string]func() error{
		"Job":         func() error { _, err := a.ops.Job(a.ctx, id); return err },
		"JobExtras":   func() error { _, err := a.ops.JobExtras(a.ctx, id); return err },
		"CancelJob":   func() error { _, err := a.ops.CancelJob(a.ctx, id); return err },
		"CancelJobOf": func() error { _, err := a.ops.CancelJobOf(a.ctx, id, from, from.Add(time.Second)); return err },
		"DeleteJob":   func() error { return a.ops.DeleteJob(a.ctx, id) },
		"RunNow":      func() error { return a.ops.RunNow(a.ctx, id) },
		"Reroute":     func() error { return a.ops.Reroute(a.ctx, id, sticky.To("w", sticky.After(time.Hour))) },
		"Signal":      func() error { _, err := a.ops.Signal(a.ctx, id, "go", 1); return err },
		"DiscardSignal": func() error {
			_, err := a.ops.DiscardSignal(a.ctx, id, "go")
			return err
		},
		"Redrive": func() error {
			r, err := a.ops.Redrive(a.ctx, id)
			if err == nil {
				err = r.Failed[id]
			}
			return err
		},
		"Release": func() error {
			r, err := a.ops.Release(a.ctx, id)
			if err == nil {
				err = r.Failed[id]
			}
			return err
		},
	}
	for name, call := range calls {
		err := call()
		if err == nil {
			t.Errorf("%s of an ID of no job: no error", name)
			continue
		}
		if msg := err.Error(); len(msg) > 500 {
			t.Errorf("%s: an error of %d bytes (%.120s...), want the ID cut short", name, len(msg), msg)
		}
		if !errors.Is(err, flow.ErrNotFound) && !errors.Is(err, flow.ErrQueueNotFound) && !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("%s: %v, want ErrNotFound, ErrQueueNotFound or ErrInvalid", name, err)
		}
	}
}
