package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// entryNames checks that err is nothing but EntryErrors, each
// ErrMalformed, and returns their names.
func entryNames(t *testing.T, what string, err error) []string {
	t.Helper()
	es, only := store.EntryErrors(err)
	if !only {
		t.Fatalf("%s: %v is not only entry errors", what, err)
	}
	var names []string
	for _, e := range es {
		if !errors.Is(e, store.ErrMalformed) {
			t.Errorf("%s: entry %s: %v, not ErrMalformed", what, e.Name, e)
		}
		names = append(names, e.Name)
	}
	if !errors.Is(err, store.ErrMalformed) && len(es) > 0 {
		t.Errorf("%s: errors.Is(%v, ErrMalformed) is false", what, err)
	}
	return names
}

// TestListingsKeepHealthyEntries: one corrupt worker record, schedule or
// queue registry entry is left out of its listing and named in the error
// (an EntryError, ErrMalformed), and every healthy entry is still
// returned: a corrupt key hid every worker, schedule or queue from the
// console and the CLI.
func TestListingsKeepHealthyEntries(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			ns := redistest.NewNamespace(t)
			st := store.New(b.rdb, store.Config{NS: ns})

			// workers: one good, one with a PID that is not a number, one
			// whose record is of another type
			must(t, st.Heartbeat(ctx, sluicetype.WorkerInfo{ID: "good", Host: "h", PID: 7, Started: time.Now(),
				Queues: map[string]int{"q": 1}, Concurrency: 2}, time.Minute))
			must(t, st.Heartbeat(ctx, sluicetype.WorkerInfo{ID: "bad-pid", Started: time.Now()}, time.Minute))
			must(t, st.Heartbeat(ctx, sluicetype.WorkerInfo{ID: "bad-type", Started: time.Now()}, time.Minute))
			kw := keys.Workers{NS: ns}
			must(t, b.rdb.HSet(ctx, kw.Worker("bad-pid"), "pid", "not-a-number").Err())
			must(t, b.rdb.Del(ctx, kw.Worker("bad-type")).Err())
			must(t, b.rdb.Set(ctx, kw.Worker("bad-type"), "x", time.Minute).Err())
			ws, err := st.Workers(ctx)
			if len(ws) != 1 || ws[0].ID != "good" || ws[0].PID != 7 {
				t.Errorf("Workers: %+v, want the good one", ws)
			}
			if names := entryNames(t, "Workers", err); len(names) != 2 {
				t.Errorf("Workers: entry errors %v, want bad-pid and bad-type", names)
			}

			// schedules: one good, one with an interval that is not a
			// number, one of another type
			must(t, st.PublishSchedule(ctx, store.ScheduleDef{Name: "good", Every: time.Hour, Queue: "q", Kind: "k"}))
			must(t, st.PublishSchedule(ctx, store.ScheduleDef{Name: "broken", Every: time.Hour, Queue: "q", Kind: "k"}))
			must(t, st.PublishSchedule(ctx, store.ScheduleDef{Name: "typed", Every: time.Hour, Queue: "q", Kind: "k"}))
			ks := keys.Schedules{NS: ns}
			must(t, b.rdb.HSet(ctx, ks.Schedule("broken"), "every", "soon").Err())
			must(t, b.rdb.Del(ctx, ks.Schedule("typed")).Err())
			must(t, b.rdb.SAdd(ctx, ks.Schedule("typed"), "x").Err())
			ss, err := st.Schedules(ctx)
			if len(ss) != 1 || ss[0].Name != "good" {
				t.Errorf("Schedules: %+v, want the good one", ss)
			}
			if names := entryNames(t, "Schedules", err); len(names) != 2 || names[0] != "broken" || names[1] != "typed" {
				t.Errorf("Schedules: entry errors %v, want broken and typed", names)
			}

			// the queue registry: two good queues, one garbage entry
			for _, q := range []string{"a", "c"} {
				if _, _, err := st.RegisterLayout(ctx, q, 2); err != nil {
					t.Fatal(err)
				}
			}
			must(t, b.rdb.HSet(ctx, keys.Queues(ns), "b", "garbage").Err())
			ls, err := st.ListLayouts(ctx)
			if len(ls) != 2 || ls[0].Queue != "a" || ls[1].Queue != "c" {
				t.Errorf("ListLayouts: %+v, want a and c", ls)
			}
			if names := entryNames(t, "ListLayouts", err); len(names) != 1 || names[0] != "b" {
				t.Errorf("ListLayouts: entry errors %v, want b", names)
			}
			m, err := st.ReadLayouts(ctx, []string{"a", "b", "nosuch"})
			if _, ok := m["a"]; !ok || len(m) != 1 {
				t.Errorf("ReadLayouts: %+v, want a", m)
			}
			if names := entryNames(t, "ReadLayouts", err); len(names) != 1 || names[0] != "b" {
				t.Errorf("ReadLayouts: entry errors %v, want b", names)
			}
		})
	}
}

// TestEntryErrors: EntryErrors finds the entry errors of a joined error,
// and says when it holds another.
func TestEntryErrors(t *testing.T) {
	a := &store.EntryError{Name: "a", Err: store.ErrMalformed}
	b := &store.EntryError{Name: "b", Err: store.ErrMalformed}
	if es, ok := store.EntryErrors(nil); !ok || es != nil {
		t.Errorf("nil: %v %v", es, ok)
	}
	if es, ok := store.EntryErrors(errors.Join(a, b)); !ok || len(es) != 2 || es[1] != b {
		t.Errorf("a and b: %v %v", es, ok)
	}
	if _, ok := store.EntryErrors(errors.Join(a, errors.New("connection refused"))); ok {
		t.Error("an entry error and another: said to be only entry errors")
	}
	if _, ok := store.EntryErrors(errors.New("connection refused")); ok {
		t.Error("another error: said to be only entry errors")
	}
}
