package step_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/step"
)

type ffParent struct{}

func (ffParent) Kind() string { return "ff_parent" }

type ffChild struct{ I int }

func (ffChild) Kind() string { return "ff_child" }

// TestFailFastJoinReplays: the parent's first attempt is woken by child
// 1's failure, Join answers ChildFailedError{Index: 1}, and the handler
// commits a step named after it; the attempt then fails (a returned
// error: no operator, no code change). Before the retry, child 0 fails
// too. The retry's Join answers child 1 again, the answer it recorded,
// and the job ends skipped. (Before, Join read the children live and
// answered the first failed by index, 0: the retry took another branch
// than its checkpoints recorded, and was parked stale_checkpoint.)
func TestFailFastJoinReplays(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	release := make(chan struct{})
	var once sync.Once
	var e *env
	register(t, reg, func(ctx context.Context, job *flow.Job[ffChild]) error {
		if job.Args.I == 1 {
			return flow.Skip("child 1 fails first")
		}
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return flow.Skip("child 0 fails later")
	})
	register(t, reg, func(ctx context.Context, job *flow.Job[ffParent]) error {
		kids, err := flow.Spawn(ctx, "kids", flow.Item{Args: ffChild{I: 0}}, flow.Item{Args: ffChild{I: 1}})
		if err != nil {
			return err
		}
		_, err = flow.Join[struct{}](ctx, kids, flow.FailFast)
		var cf *flow.ChildFailedError
		if !errors.As(err, &cf) {
			return err // waiting for the children
		}
		if err := step.Do(ctx, "compensate-"+strconv.Itoa(cf.Index), func(context.Context) error { return nil }); err != nil {
			return err
		}
		if job.Attempt == 0 {
			// child 0 fails before this attempt's retry
			once.Do(func() { close(release) })
			if _, err := testkit.AwaitState(e.Client, e.Sig, kids.IDs[0], flow.StateArchived, testkit.Timeout); err != nil {
				return err
			}
			return errors.New("fail after the compensation step")
		}
		return flow.Skip("compensated child " + strconv.Itoa(cf.Index))
	})
	e = newEnv(t, shared.Server.Client(), reg)
	id := e.Enqueue(ffParent{})
	info := e.WaitState(id, flow.StateArchived)
	if info.Reason != "skipped" {
		t.Fatalf("parent archived with reason %q (%s), want skipped: its retry took another branch than its first attempt", info.Reason, info.LastError)
	}
}
