package store_test

// The operator calls of TestWaitModel (waitmodel_ops_test.go has the
// others): cancel, delete, run now, redrive and release, bulk delete.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

func (r *waitRun) admin(what, want string, prev string, err error, pre, post *wmodel) {
	r.t.Helper()
	var se *sluicetype.StateError
	got, known := "", true
	switch {
	case err == nil:
		got = "ok:" + prev
	case errors.Is(err, store.ErrNotFound):
		got = "missing"
	case errors.As(err, &se):
		got = "refused:" + se.State
		if se.Why != "" && strings.Contains(se.Why, "suspended") {
			got = "suspended:" + se.State
		}
	default:
		known = false
	}
	r.logf("%s -> %s %v (want %s)", what, got, err, want)
	r.counts["~"+strings.Fields(what)[0]+"-"+want]++
	if known && got != want {
		r.fail("%s: %s, want %s", what, got, want)
	}
	if known {
		err = nil
	}
	r.settle(pre, post, err, what)
}

func (r *waitRun) opCancel() {
	id := r.pickID("scheduled", "running", "available", "retryable")
	pre := r.m
	post := pre.clone()
	want := "missing"
	if j := post.jobs[id]; j != nil {
		if terminalStates[j.state] {
			want = "refused:" + j.state
		} else {
			want = "ok:" + j.state
			if j.state == "running" {
				j.fence++
			}
			r.finish(post, j, "cancelled")
		}
	}
	prev, err := r.st.Cancel(r.ctx, r.ref(id), waitRetainCanc)
	r.admin("cancel "+id, want, prev, err, pre, post)
}

func (r *waitRun) opDelete() {
	id := r.pickID("scheduled", "cancelled", "archived", "completed")
	pre := r.m
	post := pre.clone()
	want := "missing"
	if j := post.jobs[id]; j != nil {
		if j.state == "running" {
			want = "refused:running"
		} else {
			want = "ok:" + j.state
			r.remove(post, id)
		}
	}
	prev, err := r.st.Delete(r.ctx, r.ref(id))
	r.admin("delete "+id, want, prev, err, pre, post)
}

func (r *waitRun) opRunNow() {
	id := r.pickID("scheduled", "retryable")
	pre := r.m
	post := pre.clone()
	want := "missing"
	if j := post.jobs[id]; j != nil {
		switch {
		case j.state == "scheduled" && j.susp:
			want = "suspended:scheduled"
		case j.state == "scheduled" || j.state == "retryable":
			want = "ok:" + j.state
			wavailable(j)
		default:
			want = "refused:" + j.state
		}
	}
	prev, err := r.st.RunNow(r.ctx, r.ref(id))
	r.admin("run now "+id, want, prev, err, pre, post)
}

func (r *waitRun) opRedrive() {
	action, takes := store.ActionRedrive, []string{"archived", "cancelled"}
	if r.chance(1, 4) {
		action, takes = store.ActionRelease, []string{"quarantined"}
	}
	id := r.pickID(takes...)
	pre := r.m
	post := pre.clone()
	want := "missing"
	if j := post.jobs[id]; j != nil {
		if slices.Contains(takes, j.state) {
			if action == store.ActionRelease {
				j.crash = 0
			}
			wavailable(j)
			want = "ok:"
		} else {
			want = "refused:" + j.state
		}
	}
	errs, err := r.st.RedriveIDs(r.ctx, r.p, action, []string{id})
	var e error
	if err == nil {
		e = errs[0]
	} else {
		e = err
	}
	r.admin(fmt.Sprintf("%s %s", action, id), want, "", e, pre, post)
}

// opBulkDelete deletes every job of one state by selector
// (lua/bulkdelete.lua), in steps of a few entries: suspended jobs are
// read from the scheduled index's buckets of later jobs and its zset,
// those waiting for signals only at its end.
func (r *waitRun) opBulkDelete() {
	states := []string{"scheduled", "scheduled", "retryable", "archived", "cancelled", "completed", "quarantined"}
	state := states[r.pick(len(states))]
	limit := 1 + r.pick(3)
	pre := r.m
	post := pre.clone()
	want := 0
	for _, j := range post.inState(state) {
		if terminalStates[state] && j.finished > r.now() {
			continue // finished after the scan began (the clock went back)
		}
		r.remove(post, j.id)
		want++
	}
	var cur store.ScanCursor
	matched, failed := 0, false
	for i := 0; ; i++ {
		st, err := r.st.DeleteStep(r.ctx, r.p, store.Selector{State: state}, cur, limit, false)
		if err != nil {
			// the same step again: a late one deletes nothing twice
			failed = true
			r.counts["bulk-delete-resent"]++
			r.logf("delete selected %s step %d: %v; sent again", state, i, err)
			if i > 200 {
				r.fail("delete selected %s: %d steps", state, i)
			}
			continue
		}
		matched += st.Matched
		cur = st.Cursor
		if len(st.Unreadable) > 0 {
			r.fail("delete selected %s: unreadable %v", state, st.Unreadable)
		}
		if st.Done {
			break
		}
		if i > 200 {
			r.fail("delete selected %s: %d steps", state, i)
		}
	}
	r.logf("delete selected %s by %d -> matched %d (want %d)", state, limit, matched, want)
	if !failed && matched != want {
		r.fail("delete selected %s matched %d jobs, want %d", state, matched, want)
	}
	r.counts["~bulk-delete-"+state]++
	r.m = post
}
