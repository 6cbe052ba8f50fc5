package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/store"
)

// TestSchedulesDelete: `sluice schedules delete NAME` refuses a schedule a
// scheduler synced lately (exit 1, saying to remove it from the code
// first, the schedule still listed), deletes it with --force or once no
// scheduler synced it for admin.ScheduleRunningWithin, and exits 3 for an
// unknown name.
func TestSchedulesDelete(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("a", email{To: "ann"}) // a tick's job, kept by the deletes
	for _, name := range []string{"digest", "report"} {
		def := store.ScheduleDef{Name: name, Every: time.Hour, Missed: "skip", Queue: "default", Kind: "email"}
		if err := f.st.PublishSchedule(f.ctx, def); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.SyncSchedule(f.ctx, name, time.Minute); err != nil { // as a scheduler does
			t.Fatal(err)
		}
	}
	out, errs, code := f.sluice("schedules", "delete", "digest")
	if code != exitError || out != "" || !strings.Contains(errs, "remove it from every scheduler's code") {
		t.Fatalf("delete of a schedule a scheduler runs: exit %d, stdout %q, stderr %q; want exit 1 saying why", code, out, errs)
	}
	if list := f.must("schedules", "list"); !strings.Contains(list, "digest") {
		t.Fatalf("the refused delete deleted it:\n%s", list)
	}
	if out := f.must("schedules", "delete", "report", "--force", "--json"); !strings.Contains(out, `"result": "deleted"`) {
		t.Fatalf("delete --force --json: %q", out)
	}
	f.clk.Advance(admin.ScheduleRunningWithin)
	if out := f.must("schedules", "delete", "digest"); out != "deleted digest (the jobs it enqueued are kept)\n" {
		t.Fatalf("delete of a stale schedule: %q", out)
	}
	if list := f.must("schedules", "list"); strings.Contains(list, "digest") || strings.Contains(list, "report") {
		t.Fatalf("schedules list after the deletes:\n%s", list)
	}
	if !f.exists("default:0:a") {
		t.Fatal("the deletes deleted a job")
	}
	if _, errs, code := f.sluice("schedules", "delete", "digest"); code != exitNotFound {
		t.Fatalf("delete of an unknown schedule: exit %d, stderr %q; want %d", code, errs, exitNotFound)
	}
}
