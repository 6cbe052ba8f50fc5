package step_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/step"
)

type currentStepJob struct{}

func (currentStepJob) Kind() string { return "current_step" }

type changePointOnly struct{}

func (changePointOnly) Kind() string { return "change_point_only" }

// TestCurrentStepFromCheckpoints: JobInfo.CurrentStep is the checkpointed
// step furthest along the handler (a cursor advanced after it does not
// count, nor does a change point, which has no position) and Progress
// the time its record carries; the job hash keeps neither, only the flag
// that it has checkpoints, which the first commit sets.
func TestCurrentStepFromCheckpoints(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	before := time.Now().Add(-time.Second)
	register(t, reg, func(ctx context.Context, _ *flow.Job[currentStepJob]) error {
		for _, name := range []string{"first", "second"} {
			if err := step.Do(ctx, name, func(context.Context) error { return nil }); err != nil {
				return err
			}
		}
		cur, err := step.NewCursor[int](ctx, "rows", 1)
		if err != nil {
			return err
		}
		return cur.Advance(ctx, 7)
	})
	register(t, reg, func(ctx context.Context, _ *flow.Job[changePointOnly]) error {
		_, err := step.Version(ctx, "schema", 1, 1)
		return err
	})
	e := newEnv(t, shared.Server.Client(), reg)
	if info := e.run(changePointOnly{}, flow.StateCompleted); len(info.Steps) != 1 || info.CurrentStep != "" || !info.Progress.IsZero() {
		t.Errorf("a job with a change point only: steps %+v, current step %q at %v; want none", info.Steps, info.CurrentStep, info.Progress)
	}
	info := e.run(currentStepJob{}, flow.StateCompleted)
	if len(info.Steps) != 3 || info.Steps[1].Name != "second" || !info.Steps[2].Cursor {
		t.Fatalf("steps %+v, want first, second, then the cursor", info.Steps)
	}
	if info.CurrentStep != "second" || !info.Progress.Equal(info.Steps[1].At) || info.Progress.Before(before) {
		t.Errorf("current step %q at %v; want second at its checkpoint's time %v", info.CurrentStep, info.Progress, info.Steps[1].At)
	}
	ref, _ := keys.ParseRef(e.NS, info.ID)
	h, err := e.RDB.HGetAll(context.Background(), ref.Partition.Job(ref.Local)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if h[keys.FieldHasSteps] != "1" || h["pt"] != "" || h["cs"] != "" {
		t.Errorf("job hash: has-steps %q, pt %q, cs %q; want 1 and no progress fields", h[keys.FieldHasSteps], h["pt"], h["cs"])
	}
}
