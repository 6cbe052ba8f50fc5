package step_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/step"
)

type ffParent40b struct{}

func (ffParent40b) Kind() string { return "review40b-ff-parent" }

type ffChild40b struct{ I int }

func (ffChild40b) Kind() string { return "review40b-ff-child" }

// TestReview40bFailFastJoinReplays: a FailFast Join's answer is not
// recorded. The parent's first attempt is woken by child 1's failure,
// Join answers ChildFailedError{Index: 1}, and the handler commits a step
// named after it; the attempt then fails (a returned error: no operator,
// no code change). Before the retry, child 0 fails too. The retry replays
// Spawn, and Join, read live from the children's records, now answers
// the first failed child by index, 0: the handler takes another branch
// than the one its checkpoints recorded, and the job is parked with
// stale_checkpoint (step 1 is "compensate-1" in the checkpoint,
// "compensate-0" now). A replay after a failure must take the path the
// first run took.
func TestReview40bFailFastJoinReplays(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	release := make(chan struct{})
	var once sync.Once
	var e *env
	register(t, reg, func(ctx context.Context, job *flow.Job[ffChild40b]) error {
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
	register(t, reg, func(ctx context.Context, job *flow.Job[ffParent40b]) error {
		kids, err := flow.Spawn(ctx, "kids", flow.Item{Args: ffChild40b{I: 0}}, flow.Item{Args: ffChild40b{I: 1}})
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
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				j, err := e.Client.Job(ctx, kids.IDs[0])
				if err == nil && j.State == flow.StateArchived {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			return errors.New("fail after the compensation step")
		}
		return flow.Skip("compensated child " + strconv.Itoa(cf.Index))
	})
	e = newEnv(t, shared.Server.Client(), reg)
	id := e.Enqueue(ffParent40b{})
	info := e.WaitState(id, flow.StateArchived)
	if info.Reason != "skipped" {
		t.Fatalf("parent archived with reason %q (%s), want skipped: its retry took another branch than its first attempt", info.Reason, info.LastError)
	}
}
