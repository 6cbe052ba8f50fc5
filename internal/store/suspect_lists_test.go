package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestSuspectsHideNoOtherList: a claim passes over at most 64 suspects
// (jobs with a crash on record) in one list, then leaves that list and
// goes on to the next. 70 suspects at the head of priority list 5 must
// not hide a healthy job of list 0, from a worker that runs a suspect
// already or from one that runs none (which takes one suspect). Before,
// reaching 64 stopped the whole claim: after an outage longer than the
// lease, which makes suspects of every job in flight, workers ran one job
// each until the suspects drained (found by an audit).
func TestSuspectsHideNoOtherList(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, noSuspect := range []bool{true, false} {
				f := newFixture(t, b)
				var jobs []store.NewJob
				for i := range 70 {
					jobs = append(jobs, store.NewJob{Local: fmt.Sprintf("s%02d", i), Priority: 5})
				}
				f.enqueue(jobs...)
				for i := range 70 {
					if err := f.rdb.HSet(f.ctx, f.p.Job(fmt.Sprintf("s%02d", i)), "c", 1).Err(); err != nil {
						t.Fatal(err)
					}
				}
				f.enqueue(store.NewJob{Local: "healthy"}) // list 0
				res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 10, Lease: time.Minute, Worker: "w", Nonce: "x",
					NoSuspect: noSuspect})
				if err != nil {
					t.Fatal(err)
				}
				want := map[string]bool{"healthy": true}
				if !noSuspect {
					want["s00"] = true
				}
				if got := locals(res.Jobs); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("running a suspect %v, 10 free slots: claimed %v, want %v", noSuspect, got, want)
				}
				// the suspects passed over are back at the front of their list, in order
				first := "s00"
				if !noSuspect {
					first = "s01"
				}
				if ids := f.rdb.LRange(f.ctx, f.p.Available(5), 0, 0).Val(); len(ids) != 1 || ids[0] != first {
					t.Errorf("list 5 starts %v after the claim, want %s", ids, first)
				}
			}
		})
	}
}
