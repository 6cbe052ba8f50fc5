package admin_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// unreadableNames checks that err is ErrMalformed and nothing but
// entries left out (admin.Unreadable), and returns their names, sorted.
func unreadableNames(t *testing.T, what string, err error) []string {
	t.Helper()
	bad, only := admin.Unreadable(err)
	if !only || !errors.Is(err, flow.ErrMalformed) {
		t.Fatalf("%s: %v: want ErrMalformed, and only entries left out", what, err)
	}
	var names []string
	for n, e := range bad {
		if !errors.Is(e, flow.ErrMalformed) {
			t.Errorf("%s: entry %s: %v, not ErrMalformed", what, n, e)
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestListingsKeepReadableEntries: a registry entry that is not a layout,
// a schedule record that does not decode and one of another type are
// each their entry's fault alone: Queues, Layouts and Schedules return
// every other entry (Queues with its paused partitions) and an error
// naming each one left out (admin.Unreadable, ErrMalformed). They failed
// whole, so that one corrupt key hid every queue or schedule from a
// console or the CLI.
func TestListingsKeepReadableEntries(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	a := newAdmin(t, rdb, map[string]int{"wide": 2})
	a.enqueue(email{To: "x"}, flow.WithQueue("wide"))
	a.enqueue(email{To: "x"})
	must(t, a.ops.PauseQueue(a.ctx, "wide"))
	must(t, rdb.HSet(a.ctx, keys.Queues(a.ns), "broken", "garbage", "zero", "0:1:0:0").Err())

	qs, err := a.ops.Queues(a.ctx)
	if got := unreadableNames(t, "Queues", err); !slices.Equal(got, []string{"broken", "zero"}) {
		t.Errorf("Queues left out %v, want [broken zero]", got)
	}
	if len(qs) != 2 || qs[0].Name != "default" || qs[1].Name != "wide" || qs[1].Partitions != 2 || qs[1].Paused != 2 || qs[0].Paused != 0 {
		t.Errorf("Queues = %+v, want default, and wide with 2 of 2 partitions paused", qs)
	}
	lays, err := a.ops.Layouts(a.ctx)
	if got := unreadableNames(t, "Layouts", err); !slices.Equal(got, []string{"broken", "zero"}) {
		t.Errorf("Layouts left out %v, want [broken zero]", got)
	}
	if len(lays) != 2 || lays[0].Name != "default" || lays[1].Name != "wide" || lays[1].Partitions != 2 {
		t.Errorf("Layouts = %+v, want default and wide", lays)
	}

	for _, n := range []string{"hourly", "broken", "wrongtype"} {
		must(t, a.st.PublishSchedule(a.ctx, store.ScheduleDef{Name: n, Every: time.Hour, Queue: "default", Kind: "email"}))
	}
	ks := keys.Schedules{NS: a.ns}
	must(t, rdb.HSet(a.ctx, ks.Schedule("broken"), "every", "soon").Err())
	must(t, rdb.Del(a.ctx, ks.Schedule("wrongtype")).Err())
	must(t, rdb.Set(a.ctx, ks.Schedule("wrongtype"), "x", 0).Err())
	for name, list := range map[string]func() ([]admin.ScheduleInfo, error){
		"Schedules":         func() ([]admin.ScheduleInfo, error) { return a.ops.Schedules(a.ctx) },
		"ReadableSchedules": func() ([]admin.ScheduleInfo, error) { return a.ops.ReadableSchedules(a.ctx) },
	} {
		ss, err := list()
		if got := unreadableNames(t, name, err); !slices.Equal(got, []string{"broken", "wrongtype"}) {
			t.Errorf("%s left out %v, want [broken wrongtype]", name, got)
		}
		if len(ss) != 1 || ss[0].Name != "hourly" || ss[0].Every != time.Hour {
			t.Errorf("%s = %+v, want hourly", name, ss)
		}
	}

	if bad, only := admin.Unreadable(nil); len(bad) != 0 || !only {
		t.Errorf("Unreadable(nil) = %v, %v; want none, true", bad, only)
	}
	if bad, only := admin.Unreadable(errors.New("connection refused")); bad != nil || only {
		t.Errorf("Unreadable(another error) = %v, %v; want nil, false", bad, only)
	}
}
