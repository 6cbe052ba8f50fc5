package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestListPagesPastNewEntries: a page of running jobs goes on where the
// last one stopped although jobs that started since sort before it (a
// later lease expiry), and although the page stopped among jobs of one
// score (leased by one claim): every job running at the first page is
// listed once. A helper's audit found the cursor was a rank, which every
// job that started meanwhile pushed down: the next page repeated jobs.
func TestListPagesPastNewEntries(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			var jobs []store.NewJob
			for i := range 15 {
				jobs = append(jobs, store.NewJob{Local: fmt.Sprintf("j%02d", i)})
			}
			f.enqueue(jobs...)
			first := map[string]bool{}
			for _, j := range f.claim(10, "w1").Jobs { // one lease expiry: ten of one score
				first[j.Local] = true
			}
			page, err := f.st.List(f.ctx, f.p, "running", "", 4, 100, "")
			if err != nil || len(page.Entries) != 4 {
				t.Fatalf("page 1: %+v, %v", page, err)
			}
			seen := map[string]int{}
			for _, e := range page.Entries {
				seen[e.Job.Local]++
			}
			f.clk.Advance(time.Second)
			f.claim(5, "w2") // later lease expiries: listed first from now on
			for cursor := page.Next; cursor != ""; cursor = page.Next {
				if page, err = f.st.List(f.ctx, f.p, "running", cursor, 4, 100, ""); err != nil {
					t.Fatalf("page after %q: %v", cursor, err)
				}
				for _, e := range page.Entries {
					seen[e.Job.Local]++
				}
			}
			for id := range first {
				if seen[id] != 1 {
					t.Errorf("job %s listed %d times, want once: %v", id, seen[id], seen)
				}
			}
			for id, k := range seen {
				if !first[id] {
					t.Errorf("job %s, claimed after the first page, listed %d times: the pages went back", id, k)
				}
			}
		})
	}
}
