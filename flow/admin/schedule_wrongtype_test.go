package admin_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
)

// TestScheduleRecordOfAnotherType: a schedule whose record key holds
// another type than a hash (written by hand, another tool). Schedules
// names it with ErrMalformed (admin.Unreadable), as documented, and the
// calls on that one schedule, Schedule and TriggerSchedule (`sluice
// schedules trigger`, the console's Trigger), say the same, not Redis's
// bare WRONGTYPE reply, which matches no sentinel of docs/errors.md.
func TestScheduleRecordOfAnotherType(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	a.enqueue(email{To: "ann"}) // the namespace has a queue
	ks := keys.Schedules{NS: a.ns}
	rdb := a.st.Client()
	if err := rdb.Set(a.ctx, ks.Schedule("nightly"), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.SAdd(a.ctx, ks.Names(), "nightly").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ops.Schedules(a.ctx); !errors.Is(err, flow.ErrMalformed) {
		t.Fatalf("Schedules: %v, want the corrupt record named with ErrMalformed", err)
	}
	if _, err := a.ops.Schedule(a.ctx, "nightly"); !errors.Is(err, flow.ErrMalformed) {
		t.Errorf("Schedule(nightly), its record a string: %v; want ErrMalformed, as Schedules says of it", err)
	}
	if _, err := a.ops.TriggerSchedule(a.ctx, "nightly"); !errors.Is(err, flow.ErrMalformed) {
		t.Errorf("TriggerSchedule(nightly), its record a string: %v; want ErrMalformed, as Schedules says of it", err)
	}
}

// TestPauseResumeOfScheduleRecordOfAnotherType: PauseSchedule and
// ResumeSchedule (`sluice schedules pause`, `resume`, the console's
// buttons) of a schedule whose record key holds another type than a hash
// say ErrMalformed naming the schedule, as Schedule and TriggerSchedule
// do, and change nothing: they answered Redis's bare WRONGTYPE script
// error, which matches no sentinel of docs/errors.md.
func TestPauseResumeOfScheduleRecordOfAnotherType(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	a.enqueue(email{To: "ann"})
	ks := keys.Schedules{NS: a.ns}
	rdb := a.st.Client()
	if err := rdb.Set(a.ctx, ks.Schedule("nightly"), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.SAdd(a.ctx, ks.Names(), "nightly").Err(); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"PauseSchedule":  func() error { return a.ops.PauseSchedule(a.ctx, "nightly") },
		"ResumeSchedule": func() error { return a.ops.ResumeSchedule(a.ctx, "nightly") },
	} {
		err := op()
		if !errors.Is(err, flow.ErrMalformed) || !strings.Contains(err.Error(), `"nightly"`) {
			t.Errorf("%s(nightly), its record a string: %v; want ErrMalformed naming the schedule", name, err)
		}
	}
	if v, err := rdb.Get(a.ctx, ks.Schedule("nightly")).Result(); err != nil || v != "not a hash" {
		t.Errorf("the record is now %q, %v; want it as it was", v, err)
	}
}
