package store_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestOperatorCallsOfAnotherJobWriteNothing: cancel, delete, run now,
// reroute, signal and redrive by ID, given the creation time of the job a tool
// showed, check it in their own script call: a job created at another
// time (given the ID since) is an *OtherJobError naming its creation
// time, nothing written, and the same call for the job's own time acts.
// A redrive of two jobs refuses the other one alone. The check was in
// the console only, before the call, and a job given the ID in between
// was acted on.
func TestOperatorCallsOfAnotherJobWriteNothing(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, tc := range []struct {
			name  string
			prep  func(f *fixture)
			state string // the job's state, left so by a refused call
			act   func(f *fixture, c store.Created) error
			after string // the job's state once acted on
		}{
			{"cancel", nil, "scheduled", func(f *fixture, c store.Created) error {
				_, err := f.st.CancelOf(f.ctx, f.ref("x"), time.Hour, c)
				return err
			}, "cancelled"},
			{"delete", nil, "scheduled", func(f *fixture, c store.Created) error {
				_, err := f.st.DeleteOf(f.ctx, f.ref("x"), c)
				return err
			}, ""},
			{"runnow", nil, "scheduled", func(f *fixture, c store.Created) error {
				_, err := f.st.RunNowOf(f.ctx, f.ref("x"), c)
				return err
			}, "available"},
			{"reroute", nil, "scheduled", func(f *fixture, c store.Created) error {
				_, err := f.st.RerouteOf(f.ctx, f.ref("x"), store.Sticky{Worker: "w2", Mode: "a", After: time.Minute}, c)
				if err == nil && f.rdb.HGet(f.ctx, f.p.Job("x"), keys.FieldStickyWorker).Val() != "w2" {
					t.Errorf("rerouted, yet the job prefers no w2")
				}
				return err
			}, "scheduled"},
			{"signal", nil, "scheduled", func(f *fixture, c store.Created) error {
				_, err := f.st.SignalOf(f.ctx, f.ref("x"), "go", []byte("p"), "k", c)
				if kept := f.rdb.HGet(f.ctx, f.p.Job("x"), keys.FieldSignalSeq).Val(); err != nil && kept != "" {
					t.Errorf("signal refused, yet one was kept (seq %s)", kept)
				} else if err == nil && kept != "1" {
					t.Errorf("signal of the job itself: seq %q, want 1", kept)
				}
				return err
			}, "scheduled"},
			{"redrive", func(f *fixture) { f.archive("y") }, "archived", func(f *fixture, c store.Created) error {
				first := f.rawState("y") == "archived"
				errs, err := f.st.RedriveIDsOf(f.ctx, f.p, store.ActionRedrive, []string{"y", "x"}, []store.Created{{}, c})
				if err != nil {
					return err
				}
				if first && (errs[0] != nil || f.rawState("y") != "available") {
					t.Errorf("the other job of the call: %v, %s; want it moved", errs[0], f.rawState("y"))
				}
				return errs[1]
			}, "available"},
		} {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				f := newFixture(t, b)
				if tc.prep != nil {
					f.archive("x")
					tc.prep(f)
				} else {
					f.enqueue(store.NewJob{Local: "x", Delay: time.Hour})
				}
				ms, err := strconv.ParseInt(f.rdb.HGet(f.ctx, f.p.Job("x"), keys.FieldCreated).Val(), 10, 64)
				if err != nil {
					t.Fatalf("created: %v", err)
				}
				at := time.UnixMilli(ms)
				err = tc.act(f, store.Created{From: at.Add(time.Millisecond), Before: at.Add(2 * time.Millisecond)})
				var other *sluicetype.OtherJobError
				if !errors.As(err, &other) || !other.Created.Equal(at) || !errors.Is(err, sluicetype.ErrWrongState) {
					t.Fatalf("%s of another job: %v; want an OtherJobError created %v", tc.name, err, at)
				}
				if s := f.rawState("x"); s != tc.state || f.rdb.HGet(f.ctx, f.p.Job("x"), keys.FieldStickyWorker).Val() != "" {
					t.Fatalf("%s of another job wrote: the job is %q, want %q untouched", tc.name, s, tc.state)
				}
				if err := tc.act(f, store.Created{From: at, Before: at.Add(time.Millisecond)}); err != nil {
					t.Fatalf("%s of the job itself: %v", tc.name, err)
				}
				if s := f.rawState("x"); s != tc.after {
					t.Errorf("%s of the job itself: it is %q, want %q", tc.name, s, tc.after)
				}
			})
		}
	}
}
