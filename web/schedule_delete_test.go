package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
)

// syncedSchedule publishes schedule name and syncs it as a scheduler
// does, at ago before now: ago past admin.ScheduleRunningWithin is a
// schedule no scheduler runs any more, 0 one a scheduler runs.
func (f *fixture) syncedSchedule(name string, ago time.Duration) {
	f.t.Helper()
	ctx := context.Background()
	st := store.New(f.env.RDB, store.Config{NS: f.env.NS, Now: func() time.Time { return time.Now().Add(-ago) }})
	testkit.Must(f.t, st.PublishSchedule(ctx, store.ScheduleDef{Name: name, Every: time.Hour, Queue: testQueue, Kind: "work"}))
	_, err := st.SyncSchedule(ctx, name, time.Minute)
	testkit.Must(f.t, err)
}

// scheduleThere reports whether schedule name is still in Redis.
func (f *fixture) scheduleThere(name string) bool {
	f.t.Helper()
	_, err := f.ops.Schedule(context.Background(), name)
	if err != nil && !errors.Is(err, flow.ErrScheduleNotFound) {
		f.t.Fatal(err)
	}
	return err == nil
}

// flashAt is the flash message of the page a 303 sent the browser to.
func (f *fixture) flashAt(c *http.Client, code int, loc string) string {
	f.t.Helper()
	if code != http.StatusSeeOther {
		f.t.Fatalf("post: %d, want 303", code)
	}
	_, page := f.get(c, strings.TrimPrefix(loc, testPrefix))
	_, rest, _ := strings.Cut(page, `class="flash" role="status">`)
	msg, _, _ := strings.Cut(rest, "<")
	return msg
}

// TestDeleteScheduleActionDeletesStaleSchedule: the schedules page offers
// a Delete for each schedule; its confirmation says what goes (the record
// and its claimed ticks) and what stays (the jobs enqueued); confirmed, a
// schedule no scheduler synced lately is deleted, the others kept, and the
// schedules page says so. The form posted twice (a double click) says the
// first post deleted it, not that it is not found.
func TestDeleteScheduleActionDeletesStaleSchedule(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.syncedSchedule("old", time.Hour)
	f.syncedSchedule("kept", time.Hour)
	c := client()
	if _, body := f.get(c, "/schedules"); !strings.Contains(body, `/confirm/delete-schedule?schedule=old"`) {
		t.Fatalf("the schedules page offers no Delete for old:\n%s", mainOf(body))
	}
	code, body := f.get(c, "/confirm/delete-schedule?schedule=old")
	if code != http.StatusOK || !strings.Contains(body, "claimed") || !strings.Contains(body, "enqueued are kept") {
		t.Fatalf("confirmation: %d, want it to say what is deleted and that the jobs are kept\n%s", code, mainOf(body))
	}
	form := hiddenFields(body)
	if form.Get("once") == "" || form.Get("schedule") != "old" || form.Has("force") {
		t.Fatalf("the confirmation's form: %v", form)
	}
	code, loc, body := f.post(c, "/act/delete-schedule", form)
	if loc != testPrefix+"/schedules" {
		t.Fatalf("delete: %d to %q\n%s", code, loc, body)
	}
	if msg := f.flashAt(c, code, loc); msg != "deleted schedule old (the jobs it enqueued are kept)" {
		t.Errorf("flash %q", msg)
	}
	if f.scheduleThere("old") || !f.scheduleThere("kept") {
		t.Errorf("after the delete: old there %v, kept there %v; want old gone, kept there", f.scheduleThere("old"), f.scheduleThere("kept"))
	}
	code, loc, _ = f.post(c, "/act/delete-schedule", form)
	if msg := f.flashAt(c, code, loc); !strings.Contains(msg, "done already") || !strings.Contains(msg, "deleted schedule old") {
		t.Errorf("the same confirmation posted again: %q; want it said done already", msg)
	}
}

// TestDeleteScheduleRunningRefusedThenForced: a schedule a scheduler
// synced lately is refused, 409, with the operator API's explanation and
// nothing deleted; the page offers the forced delete as a form of its
// own, which deletes it. A force field other than 1 is refused, 400.
func TestDeleteScheduleRunningRefusedThenForced(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.syncedSchedule("nightly", 0)
	c := client()
	code, loc, body := f.act(c, "delete-schedule", url.Values{"schedule": {"nightly"}})
	if code != http.StatusConflict || !strings.Contains(body, "was synced by a scheduler at") || !strings.Contains(body, "nothing was deleted") {
		t.Fatalf("delete of a running schedule: %d to %q, want 409 explaining\n%s", code, loc, mainOf(body))
	}
	if !f.scheduleThere("nightly") {
		t.Fatal("the refused delete deleted the schedule")
	}
	_, forced, ok := strings.Cut(body, `id="force-form"`)
	if !ok {
		t.Fatalf("the refusal offers no forced delete:\n%s", mainOf(body))
	}
	forced, _, _ = strings.Cut(forced, "</form>")
	if !strings.Contains(forced, `id="confirm-force"`) || !strings.Contains(forced, "starts it afresh") {
		t.Errorf("the forced delete's form has no button of its own, or does not say what forcing does:\n%s", forced)
	}
	form := hiddenFields(forced)
	if form.Get("force") != "1" || form.Get("schedule") != "nightly" || form.Get("csrf") == "" || form.Get("once") == "" {
		t.Fatalf("the forced delete's form: %v", form)
	}
	bad := url.Values{"schedule": {"nightly"}, "force": {"yes"}, "csrf": {form.Get("csrf")}}
	if code, _, body := f.post(c, "/act/delete-schedule", bad); code != http.StatusBadRequest || !f.scheduleThere("nightly") {
		t.Fatalf("force=yes: %d, want 400 and nothing deleted\n%s", code, mainOf(body))
	}
	code, loc, _ = f.post(c, "/act/delete-schedule", form)
	if msg := f.flashAt(c, code, loc); msg != "deleted schedule nightly, forced (the jobs it enqueued are kept)" {
		t.Errorf("flash %q", msg)
	}
	if f.scheduleThere("nightly") {
		t.Error("the forced delete left the schedule")
	}
}

// TestDeleteScheduleWithoutCSRFTokenRefused: a delete posted with no CSRF
// token, or a wrong one, is refused (403) and deletes nothing.
func TestDeleteScheduleWithoutCSRFTokenRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.syncedSchedule("old", time.Hour)
	c := client()
	if code, _ := f.get(c, "/confirm/delete-schedule?schedule=old"); code != http.StatusOK {
		t.Fatalf("confirmation: %d", code)
	}
	for _, form := range []url.Values{
		{"schedule": {"old"}, "force": {"1"}},
		{"schedule": {"old"}, "force": {"1"}, "csrf": {strings.Repeat("x", 43)}},
	} {
		if code, _, body := f.post(c, "/act/delete-schedule", form); code != http.StatusForbidden {
			t.Errorf("post %v: %d, want 403\n%s", form, code, body)
		}
		if !f.scheduleThere("old") {
			t.Fatalf("post %v deleted the schedule", form)
		}
	}
}

// TestDeleteScheduleOfCorruptRecord: a schedule whose record does not
// decode is offered its Delete on the schedules page, the remedy for it;
// never synced, it is refused as running, and its forced delete removes
// it.
func TestDeleteScheduleOfCorruptRecord(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	ctx := context.Background()
	ks := keys.Schedules{NS: f.env.NS}
	testkit.Must(t, f.env.RDB.SAdd(ctx, ks.Names(), "broken").Err())
	testkit.Must(t, f.env.RDB.HSet(ctx, ks.Schedule("broken"), "every", "soon", "queue", testQueue).Err())
	c := client()
	if _, body := f.get(c, "/schedules"); !strings.Contains(body, `/confirm/delete-schedule?schedule=broken"`) {
		t.Fatalf("the corrupt schedule's row offers no Delete:\n%s", mainOf(body))
	}
	code, _, body := f.act(c, "delete-schedule", url.Values{"schedule": {"broken"}})
	_, forced, ok := strings.Cut(body, `id="force-form"`)
	if code != http.StatusConflict || !ok || !strings.Contains(body, "never synced") {
		t.Fatalf("delete of a never synced schedule: %d, want 409 offering the forced delete\n%s", code, mainOf(body))
	}
	code, loc, _ := f.post(c, "/act/delete-schedule", hiddenFields(forced))
	if msg := f.flashAt(c, code, loc); !strings.HasPrefix(msg, "deleted schedule broken, forced") {
		t.Errorf("flash %q", msg)
	}
	if f.env.RDB.Exists(ctx, ks.Schedule("broken")).Val() != 0 || f.env.RDB.SIsMember(ctx, ks.Names(), "broken").Val() {
		t.Errorf("the forced delete left the record or the name")
	}
}
