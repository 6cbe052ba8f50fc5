package admin_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
)

// staleSchedule publishes schedule name and syncs it, as a scheduler
// does, then moves the clock past ScheduleRunningWithin: a schedule no
// scheduler runs any more.
func (a *fixture) staleSchedule(name string) {
	a.t.Helper()
	if err := a.st.PublishSchedule(a.ctx, store.ScheduleDef{Name: name, Every: time.Minute, Queue: "default", Kind: "email"}); err != nil {
		a.t.Fatal(err)
	}
	if _, err := a.st.SyncSchedule(a.ctx, name, time.Minute); err != nil {
		a.t.Fatal(err)
	}
	a.clk.Advance(admin.ScheduleRunningWithin)
}

// TestDeleteScheduleBadInputIsTypedAndWritesNothing: DeleteSchedule of a
// malformed name is ErrInvalid, of an unknown one ErrScheduleNotFound
// (`sluice schedules delete` exits 3), and of one whose record holds
// another type than a hash ErrMalformed naming it, the record left as it
// was, even forced.
func TestDeleteScheduleBadInputIsTypedAndWritesNothing(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	force := admin.DeleteScheduleOptions{Force: true}
	if err := a.ops.DeleteSchedule(a.ctx, "bad name", force); !errors.Is(err, flow.ErrInvalid) {
		t.Errorf("DeleteSchedule(bad name): %v; want ErrInvalid", err)
	}
	if err := a.ops.DeleteSchedule(a.ctx, "nightly", force); !errors.Is(err, flow.ErrScheduleNotFound) {
		t.Errorf("DeleteSchedule(unknown): %v; want ErrScheduleNotFound", err)
	}
	ks := keys.Schedules{NS: a.ns}
	rdb := a.st.Client()
	if err := rdb.Set(a.ctx, ks.Schedule("nightly"), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.SAdd(a.ctx, ks.Names(), "nightly").Err(); err != nil {
		t.Fatal(err)
	}
	err := a.ops.DeleteSchedule(a.ctx, "nightly", force)
	if !errors.Is(err, flow.ErrMalformed) || !strings.Contains(err.Error(), `"nightly"`) {
		t.Errorf("DeleteSchedule(nightly), its record a string: %v; want ErrMalformed naming it", err)
	}
	if v, err := rdb.Get(a.ctx, ks.Schedule("nightly")).Result(); err != nil || v != "not a hash" {
		t.Errorf("the record is now %q, %v; want it as it was", v, err)
	}
	if !rdb.SIsMember(a.ctx, ks.Names(), "nightly").Val() {
		t.Error("the refused delete removed the name")
	}
}

// TestDeleteScheduleResentAfterLostReplyAnswersDeleted: a DeleteSchedule
// whose reply is lost after Redis ran it, sent again (as go-redis does),
// answers nil to its caller, which did delete the schedule: not
// ErrScheduleNotFound.
func TestDeleteScheduleResentAfterLostReplyAnswersDeleted(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	a := newAdmin(t, rdb, nil)
	a.staleSchedule("nightly")
	hook := &testkit.LoseFirstReply{Script: lua.Schedule, Resend: true}
	rdb.AddHook(hook)
	if err := a.ops.DeleteSchedule(a.ctx, "nightly", admin.DeleteScheduleOptions{}); err != nil {
		t.Fatalf("DeleteSchedule re-sent after its reply was lost: %v; want nil", err)
	}
	if !hook.Lost.Load() || hook.First != hook.Again {
		t.Errorf("lost %v; first run answered %s, the re-send %s", hook.Lost.Load(), hook.First, hook.Again)
	}
	if _, err := a.ops.Schedule(a.ctx, "nightly"); !errors.Is(err, flow.ErrScheduleNotFound) {
		t.Errorf("Schedule after the delete: %v; want ErrScheduleNotFound", err)
	}
}
