package store_test

import (
	"errors"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestOperatorCallsOfMovedOnJobWriteNothing: cancel and delete given the
// count of redrives a tool showed, and run now, redrive and release by
// ID given the fence it showed, check it in their own script call: a job
// that was redriven or ran again since (keeping its creation time) is a
// *MovedOnError naming what moved and the job's state, nothing written,
// and the same call naming the job as it is now acts. A redrive of two
// jobs refuses that one alone. The check was in the console only, before
// the call, and a job that moved on in between was acted on again.
func TestOperatorCallsOfMovedOnJobWriteNothing(t *testing.T) {
	t.Parallel()
	n := func(v int64) *int64 { return &v }
	for _, b := range backends(t) {
		for _, tc := range []struct {
			name  string
			field string // the field that moves: keys.FieldFence or keys.FieldRedrives
			// prep makes job x as a tool shows it; move moves it on
			prep, move func(f *fixture)
			state      string // its state once moved on, left so by a refused call
			act        func(f *fixture, c store.Created) error
			after      string // its state once acted on
		}{
			{"cancel", keys.FieldRedrives, func(f *fixture) {
				f.enqueue(store.NewJob{Local: "x", Delay: time.Hour})
			}, func(f *fixture) {
				f.mustOp(f.st.Cancel(f.ctx, f.ref("x"), time.Hour))
				f.redriveOne("x", store.ActionRedrive)
			}, "available", func(f *fixture, c store.Created) error {
				_, err := f.st.CancelOf(f.ctx, f.ref("x"), time.Hour, c)
				return err
			}, "cancelled"},
			{"delete", keys.FieldRedrives, func(f *fixture) {
				f.archive("x")
			}, func(f *fixture) {
				f.redriveOne("x", store.ActionRedrive)
			}, "available", func(f *fixture, c store.Created) error {
				_, err := f.st.DeleteOf(f.ctx, f.ref("x"), c)
				return err
			}, ""},
			{"runnow", keys.FieldFence, func(f *fixture) {
				f.enqueue(store.NewJob{Local: "x"})
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeRetry, Reason: "error", Message: "boom"})
			}, func(f *fixture) {
				f.mustOp(f.st.RunNow(f.ctx, f.ref("x")))
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeRetry, Reason: "error", Message: "boom"})
			}, "retryable", func(f *fixture, c store.Created) error {
				_, err := f.st.RunNowOf(f.ctx, f.ref("x"), c)
				return err
			}, "available"},
			{"redrive", keys.FieldFence, func(f *fixture) {
				f.archive("x", "y")
			}, func(f *fixture) {
				f.redriveOne("x", store.ActionRedrive)
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeRetry, Reason: "error", Message: "boom"})
			}, "archived", func(f *fixture, c store.Created) error {
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
			{"release", keys.FieldFence, func(f *fixture) {
				f.enqueue(store.NewJob{Local: "x"})
				f.crashOut("x")
			}, func(f *fixture) {
				f.redriveOne("x", store.ActionRelease)
				f.crashOut("x")
			}, "quarantined", func(f *fixture, c store.Created) error {
				errs, err := f.st.RedriveIDsOf(f.ctx, f.p, store.ActionRelease, []string{"x"}, []store.Created{c})
				if err != nil {
					return err
				}
				return errs[0]
			}, "available"},
		} {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				f := newFixture(t, b)
				tc.prep(f)
				jk := f.p.Job("x")
				count := func() int64 {
					v, _ := strconv.ParseInt(f.rdb.HGet(f.ctx, jk, tc.field).Val(), 10, 64) // not there: 0
					return v
				}
				ms, err := strconv.ParseInt(f.rdb.HGet(f.ctx, jk, keys.FieldCreated).Val(), 10, 64)
				if err != nil {
					t.Fatalf("created: %v", err)
				}
				at := time.UnixMilli(ms)
				shown := func(v int64) store.Created {
					c := store.Created{From: at, Before: at.Add(time.Millisecond)}
					if tc.field == keys.FieldFence {
						c.Fence = n(v)
					} else {
						c.Redrives = n(v)
					}
					return c
				}
				was := count()
				tc.move(f)
				if s := f.rawState("x"); s != tc.state || count() == was {
					t.Fatalf("moved on, the job is %s, %s %d; want %s, not %d", s, tc.field, count(), tc.state, was)
				}
				before := f.rdb.HGetAll(f.ctx, jk).Val()
				err = tc.act(f, shown(was))
				var moved *sluicetype.MovedOnError
				want := map[string]string{keys.FieldFence: "fence", keys.FieldRedrives: "redrives"}[tc.field]
				if !errors.As(err, &moved) || moved.Field != want || moved.State != tc.state || !errors.Is(err, sluicetype.ErrWrongState) {
					t.Fatalf("%s of the job moved on: %v; want a MovedOnError of %s, state %s", tc.name, err, want, tc.state)
				}
				if got := f.rdb.HGetAll(f.ctx, jk).Val(); !maps.Equal(got, before) {
					t.Fatalf("%s of the job moved on wrote it:\n%v\nwas\n%v", tc.name, got, before)
				}
				if err := tc.act(f, shown(count())); err != nil {
					t.Fatalf("%s of the job as it is now: %v", tc.name, err)
				}
				if s := f.rawState("x"); s != tc.after {
					t.Errorf("%s of the job as it is now: it is %q, want %q", tc.name, s, tc.after)
				}
			})
		}
	}
}

// mustOp fails the test when an operator's call that returns a state
// fails.
func (f *fixture) mustOp(_ string, err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("operator call: %v", err)
	}
}

// redriveOne redrives (or releases) job local, which must move.
func (f *fixture) redriveOne(local string, a store.RedriveAction) {
	f.t.Helper()
	errs, err := f.st.RedriveIDs(f.ctx, f.p, a, []string{local})
	if err == nil {
		err = errs[0]
	}
	if err != nil {
		f.t.Fatalf("%s %s: %v", a, local, err)
	}
}
