package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
)

// TestSchedulePendingTicksOfAnotherTypeIsThatScheduleAlone: one schedule
// of a scheduler has its pending ticks key overwritten with a string
// (written by hand). Its rounds fail with ErrMalformed and write nothing
// to its record (its last tick and owed windows as they were: Redis does
// not roll a script back, and its sync started last anew and dropped
// owed before it raised), while the other schedule of the same scheduler
// goes on ticking.
func TestSchedulePendingTicksOfAnotherTypeIsThatScheduleAlone(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	ctx := context.Background()
	ks := keys.Schedules{NS: e.ns}
	if err := e.rdb.HSet(ctx, ks.Schedule("bad"), "last", "garbage", "owed", "x:y").Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.Set(ctx, ks.Pending("bad"), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s := e.newScheduler(flow.Schedule{Name: "good", Cron: "* * * * *", Args: report{}},
		flow.Schedule{Name: "bad", Cron: "* * * * *", Args: report{}})
	stop := e.run(s)
	e.wait("good", 1)
	e.clk.Advance(time.Minute)
	e.wait("good", 1)
	stop()
	if diff := cmp.Diff(tickIDs("good", minutes(1)...), e.queued()); diff != "" {
		t.Fatalf("jobs (-want +got):\n%s", diff)
	}
	if err := flow.Round(s, "bad"); !errors.Is(err, flow.ErrMalformed) {
		t.Errorf("a round of the schedule whose pending ticks are a string: %v; want ErrMalformed", err)
	}
	rec := e.rdb.HMGet(ctx, ks.Schedule("bad"), "last", "owed").Val()
	if rec[0] != "garbage" || rec[1] != "x:y" {
		t.Errorf("the refused rounds wrote the record: last %v, owed %v; want garbage, x:y", rec[0], rec[1])
	}
}
