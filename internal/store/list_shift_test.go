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

// TestListPagesPastLeftTies: a listing that stopped among entries of one
// score goes on after the last one it showed although some of those it
// showed left between pages (cancelled or deleted; the last one shown
// too): every job still there is listed once. A review found the cursor
// counted the entries of that score passed over, so that each one gone
// made the next page pass over a job never shown: held jobs, all due at
// one never-reached time, and jobs finished in one call.
func TestListPagesPastLeftTies(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, state := range []string{"scheduled", "completed"} {
			for _, gone := range []string{"first", "last"} {
				t.Run(b.name+"/"+state+"/"+gone, func(t *testing.T) {
					f := newFixture(t, b)
					var jobs []store.NewJob
					for i := range 7 {
						jobs = append(jobs, store.NewJob{Local: fmt.Sprintf("h%d", i), Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Hold: "fp"})
					}
					if state == "scheduled" { // held behind q: due at one time
						f.enqueue(store.NewJob{Local: "q", Hold: "fp"})
						f.crashOut("q")
						if res, err := f.st.Enqueue(f.ctx, f.p, jobs); err != nil || res[0].HeldBy != "q" {
							t.Fatalf("enqueue held: %+v %v", res, err)
						}
					} else { // completed by one ack call: one deletion time
						f.enqueue(jobs...)
						var acks []store.Ack
						for _, l := range f.claimLeases(7, "w") {
							acks = append(acks, store.Ack{Lease: l, Code: store.CodeOK})
						}
						if _, _, err := f.st.Ack(f.ctx, f.p, acks); err != nil {
							t.Fatal(err)
						}
					}
					seen := map[string]int{}
					var order []string
					cur := ""
					for page := 0; page < 10; page++ {
						pg, err := f.st.List(f.ctx, f.p, state, cur, 3, 100, "")
						if err != nil {
							t.Fatal(err)
						}
						for _, e := range pg.Entries {
							seen[e.Job.Local]++
							order = append(order, e.Job.Local)
						}
						if page == 0 {
							out := pg.Entries[0].Job.Local
							if gone == "last" {
								out = pg.Entries[len(pg.Entries)-1].Job.Local
							}
							if _, err := f.st.Delete(f.ctx, f.ref(out)); err != nil {
								t.Fatal(err)
							}
							delete(seen, out)
						}
						if cur = pg.Next; cur == "" {
							break
						}
					}
					for _, j := range jobs {
						if _, _, err := f.st.Get(f.ctx, f.ref(j.Local)); err == nil && seen[j.Local] != 1 {
							t.Errorf("%s listed %d times, want once (pages: %v)", j.Local, seen[j.Local], order)
						}
					}
				})
			}
		}
	}
}
