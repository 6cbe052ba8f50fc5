package web

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
)

// TestTriggerLostReplyNamesTheJob: a trigger whose enqueue Redis ran but
// whose reply was lost fails, and the page says under which ID the job
// may have been added, so that the operator looks before triggering
// again (a second trigger adds a second job); the job is there.
func TestTriggerLostReplyNamesTheJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.startScheduler("nightly")
	f.enqueue(work{Order: "first"}) // the application registers the queue (a trigger registers none)
	c := client()
	form := url.Values{"schedule": {"nightly"}}
	code, body := f.get(c, "/confirm/trigger?"+form.Encode())
	if code != http.StatusOK {
		t.Fatalf("confirm trigger: %d\n%s", code, body)
	}
	form.Set("csrf", csrfOf(body))
	hook := &testkit.LoseFirstReply{Script: lua.Enqueue}
	f.env.RDB.AddHook(hook)
	code, _, body = f.post(c, "/act/trigger", form)
	if !hook.Lost.Load() {
		t.Fatal("no enqueue reply was lost")
	}
	if code == http.StatusSeeOther {
		t.Fatal("the trigger reported success though its reply was lost")
	}
	m := regexp.MustCompile(`added as (\S+);`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the error page does not name the job's ID:\n%s", body)
	}
	id := strings.ReplaceAll(m[1], "&#43;", "+")
	if j := f.env.Job(id); j.Kind != "work" {
		t.Errorf("the job named, %s, is a %q; want the schedule's work job", id, j.Kind)
	}
}

// TestTriggerFormPostedTwice: one confirmation of a trigger, its form
// posted twice (a double click, a browser sending the POST again), adds
// one job: the form carries a key of its own, the trigger's job ID. A
// second confirmation is a second trigger. Before, each post added a job.
func TestTriggerFormPostedTwice(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.startScheduler("nightly")
	f.enqueue(work{Order: "first"})
	c := client()
	confirm := func() url.Values {
		form := url.Values{"schedule": {"nightly"}}
		code, body := f.get(c, "/confirm/trigger?"+form.Encode())
		if code != http.StatusOK {
			t.Fatalf("confirm: %d\n%s", code, body)
		}
		_, rest, ok := strings.Cut(body, `name="once" value="`)
		if !ok {
			t.Fatalf("the confirmation has no key of its own:\n%s", body)
		}
		once, _, _ := strings.Cut(rest, `"`)
		form.Set("once", once)
		form.Set("csrf", csrfOf(body))
		return form
	}
	form := confirm()
	code1, loc1, body1 := f.post(c, "/act/trigger", form)
	code2, loc2, body2 := f.post(c, "/act/trigger", form)
	if code1 != http.StatusSeeOther || code2 != http.StatusSeeOther {
		t.Fatalf("posts: %d, %d\n%s\n%s", code1, code2, body1, body2)
	}
	if loc1 != loc2 {
		t.Fatalf("one confirmation, posted twice, added two jobs: %s and %s", loc1, loc2)
	}
	if _, body := f.get(c, strings.TrimPrefix(loc2, testPrefix)); !strings.Contains(body, "triggered nightly already, by this confirmation") {
		t.Fatalf("the second post does not say the first added the job:\n%s", body)
	}
	if _, loc3, _ := f.post(c, "/act/trigger", confirm()); loc3 == loc1 {
		t.Fatalf("a second confirmation triggered nothing new: %s", loc3)
	}
}

// TestTriggerUniqueNotTriggered: a unique schedule's trigger that meets
// the job holding its key adds nothing, and the console says "not
// triggered", on that job's page; it said "triggered" before.
func TestTriggerUniqueNotTriggered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.startScheduler("digest", flow.WithUnique("digest", time.Hour, flow.KeepExisting))
	f.enqueue(work{Order: "first"}) // registers the queue; no worker runs the trigger's job
	c := client()
	trigger := func() (string, string) {
		form := url.Values{"schedule": {"digest"}}
		code, body := f.get(c, "/confirm/trigger?"+form.Encode())
		if code != http.StatusOK {
			t.Fatalf("confirm: %d\n%s", code, body)
		}
		_, rest, _ := strings.Cut(body, `name="once" value="`)
		once, _, _ := strings.Cut(rest, `"`)
		form.Set("once", once)
		form.Set("csrf", csrfOf(body))
		code, loc, body := f.post(c, "/act/trigger", form)
		if code != http.StatusSeeOther {
			t.Fatalf("trigger: %d\n%s", code, body)
		}
		_, page := f.get(c, strings.TrimPrefix(loc, testPrefix))
		return loc, page
	}
	loc1, page1 := trigger()
	if !strings.Contains(page1, "triggered digest: ") {
		t.Fatalf("the first trigger does not say it triggered:\n%s", page1)
	}
	loc2, page2 := trigger()
	if loc2 != loc1 || !strings.Contains(page2, "not triggered digest") {
		t.Fatalf("a trigger that met the job holding the key: to %s (the holder is at %s), saying:\n%s", loc2, loc1, page2)
	}
}

// TestTriggerRefusedForTheScheduleRecordIsNoServerError: a trigger the
// operator API refuses for what the schedule's record holds, a job
// template it cannot decode (flow.ErrMalformed) or one a scheduler of an
// older release published (admin.ErrScheduleOutdated), is answered 409,
// as other refusals about the data are, with the API's explanation: not
// 500, which says the console broke. Nothing is enqueued.
func TestTriggerRefusedForTheScheduleRecordIsNoServerError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		rewrite func(f *fixture, key string)
		says    string
	}{
		{"malformed template", func(f *fixture, key string) {
			testkit.Must(t, f.env.RDB.HSet(context.Background(), key, "job", "not a template").Err())
		}, "job template"},
		{"outdated template", func(f *fixture, key string) {
			ctx := context.Background()
			var tmpl map[string]any
			testkit.Must(t, msgpack.Unmarshal(must(f.env.RDB.HGet(ctx, key, "job").Bytes()), &tmpl))
			delete(tmpl, "route") // as a scheduler of an older release published it
			delete(tmpl, "placed")
			testkit.Must(t, f.env.RDB.HSet(ctx, key, "job", must(msgpack.Marshal(tmpl))).Err())
		}, "run its Scheduler on this release"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, Options{}, false)
			f.startScheduler("nightly")
			f.enqueue(work{Order: "first"}) // the application registers the queue
			c := client()
			form := url.Values{"schedule": {"nightly"}}
			code, body := f.get(c, "/confirm/trigger?"+form.Encode())
			if code != http.StatusOK {
				t.Fatalf("confirm trigger: %d\n%s", code, body)
			}
			form.Set("csrf", csrfOf(body))
			tc.rewrite(f, keys.Schedules{NS: f.env.NS}.Schedule("nightly"))
			code, _, body = f.post(c, "/act/trigger", form)
			if code != http.StatusConflict || !strings.Contains(body, tc.says) {
				t.Fatalf("trigger: %d, want 409 saying %q\n%s", code, tc.says, body)
			}
			st := must(f.ops.QueueStats(context.Background(), testQueue, 0))
			var n int64
			for _, d := range st.Depth {
				n += d
			}
			if n != 1 {
				t.Errorf("%d jobs on the queue, want the first alone: the trigger enqueued", n)
			}
		})
	}
}
