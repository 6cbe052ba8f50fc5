package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestLeaseHolder reads the worker and start a lease ID names, and
// nothing from an older release's lease IDs or a mangled one.
func TestLeaseHolder(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1767268800000)
	for _, c := range []struct {
		lease, worker string
		ok            bool
	}{
		{"w-1/1767268800000/ab12-3.1+", "w-1", true},
		{"host:9/1767268800000/ab12-3.p2=", "host:9", true},
		{"a/b/1767268800000/n.1", "a/b", true}, // a worker ID with '/' (none valid has one)
		{"ab12-3.1+", "", false},               // an older release's
		{"/1767268800000/n.1", "", false},
		{"w/17e3/n.1", "", false},
		{"w/-1/n.1", "", false},
		{"", "", false},
		{strings.Repeat("w", 1024) + "/1767268800000/n.1", "", false}, // longer than lease_of reads
	} {
		w, start, ok := store.LeaseHolder(c.lease)
		if w != c.worker || ok != c.ok || ok && !start.Equal(at) {
			t.Errorf("LeaseHolder(%q) = %q, %v, %v; want %q, %v", c.lease, w, start, ok, c.worker, c.ok)
		}
	}
	if n := store.LeaseNonce("w/1767268800000/ab12-3.p2="); n != "ab12-3" {
		t.Errorf("LeaseNonce = %q, want ab12-3", n)
	}
}

// leaseAsOlderRelease enqueues job local and leases it as a release
// whose lease IDs named no holder did: a claim's lease, its ID rewritten
// in that release's shape, its holder (worker) and start in fields. It
// returns the start.
func (f *fixture) leaseAsOlderRelease(local, worker string) time.Time {
	f.t.Helper()
	f.enqueue(store.NewJob{Local: local})
	start := f.clk.Now()
	f.claimOne("someone")
	if err := f.rdb.HSet(f.ctx, f.p.Job(local), keys.FieldLeaseID, "old-nonce.1",
		keys.FieldWorker, worker, keys.FieldLeaseStart, fmt.Sprint(start.UnixMilli())).Err(); err != nil {
		f.t.Fatal(err)
	}
	return start
}

// TestLeaseNamesItsHolder: a claim writes no worker or lease-start field
// into the job; its lease ID names them. A job's view, its reaping and
// its orphan record name the lease's holder, not an older release's
// fields left in the hash by an earlier lease; a job leased by an older
// release (a lease ID of the older shape) is read from those fields.
func TestLeaseNamesItsHolder(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			// leased by an older release: its lease ID names no holder,
			// the fields do
			start := f.leaseAsOlderRelease("job", "old-worker")
			jk := f.p.Job("job")
			f.clk.Advance(time.Second)
			if got, _ := f.get("job"); got.Worker != "old-worker" || !got.LeaseStart.Equal(start) {
				t.Fatalf("older release's lease: worker %q start %v, want old-worker %v", got.Worker, got.LeaseStart, start)
			}
			f.clk.Advance(30 * time.Second)
			if reaped, err := f.reap(10); err != nil || len(reaped) != 1 || reaped[0].Holder != "old-worker" {
				t.Fatalf("reap = %+v, %v; want old-worker's lease", reaped, err)
			}
			if got, _ := f.get("job"); got.Orphan.Holder != "old-worker" {
				t.Fatalf("orphan holder %q, want old-worker", got.Orphan.Holder)
			}

			// leased by this release: the old fields go (an older
			// release's reader would take them for this lease's,
			// TestClaimDropsOlderHolderFields), and where some are found
			// all the same they mean nothing
			f.clk.Advance(time.Minute)
			begun := f.clk.Now()
			j := f.claimOne("new-worker")
			if w, _, ok := store.LeaseHolder(j.LeaseID); !ok || w != "new-worker" {
				t.Fatalf("lease ID %q names no new-worker", j.LeaseID)
			}
			if v, err := f.rdb.HGet(f.ctx, jk, keys.FieldWorker).Result(); err == nil {
				t.Fatalf("claim left or wrote the worker field (%q): the lease ID carries it", v)
			}
			if err := f.rdb.HSet(f.ctx, jk, keys.FieldWorker, "old-worker",
				keys.FieldLeaseStart, fmt.Sprint(start.UnixMilli())).Err(); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(time.Second)
			if got, _ := f.get("job"); got.Worker != "new-worker" || !got.LeaseStart.Equal(begun) || got.LeaseID != j.LeaseID {
				t.Fatalf("job %+v; want leased to new-worker since %v", got, begun)
			}
			page, err := f.st.List(f.ctx, f.p, "running", "", 10, 100, "")
			if err != nil || len(page.Entries) != 1 || page.Entries[0].Job.Worker != "new-worker" ||
				!page.Entries[0].Job.LeaseStart.Equal(begun) {
				t.Fatalf("listing %+v, %v; want the job leased to new-worker since %v", page, err, begun)
			}
			// a worker that gives the lease up records itself as the orphan's holder
			if r := f.ack(j, store.Ack{Code: store.CodeExpire, Delay: time.Second}); r.Err != nil {
				t.Fatalf("expire: %+v", r)
			}
			if got, _ := f.get("job"); got.Orphan.Holder != "new-worker" || got.Orphan.Count != 2 {
				t.Fatalf("orphan %+v, want new-worker's, the second", got.Orphan)
			}
			f.clk.Advance(time.Minute)
			f.claimOne("third")
			f.clk.Advance(31 * time.Second)
			if reaped, err := f.reap(10); err != nil || len(reaped) != 1 || reaped[0].Holder != "third" {
				t.Fatalf("reap = %+v, %v; want third's lease", reaped, err)
			}
		})
	}
}

// TestClaimDropsOlderHolderFields: a job leased by an older release keeps
// that release's worker and lease-start fields once its attempt ends (a
// crash, a retry). A claim of this release that leases it again deletes
// them: an older release's reader (its reaper, sluice jobs show, the
// console, while builds are mixed or an older tool is in use) reads the
// holder and start from them alone, and named that earlier worker and
// time as this lease's, the orphan record of its reaper too. Without
// them it shows no holder, as the upgrade note says.
func TestClaimDropsOlderHolderFields(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.leaseAsOlderRelease("job", "old-worker")
			jk := f.p.Job("job")
			f.clk.Advance(31 * time.Second)
			if reaped, err := f.reap(10); err != nil || len(reaped) != 1 || reaped[0].Holder != "old-worker" {
				t.Fatalf("reap = %+v, %v; want old-worker's lease", reaped, err)
			}
			f.clk.Advance(time.Minute)
			j := f.claimOne("new-worker")
			if w, _, ok := store.LeaseHolder(j.LeaseID); !ok || w != "new-worker" {
				t.Fatalf("lease ID %q names no new-worker", j.LeaseID)
			}
			left, err := f.rdb.HMGet(f.ctx, jk, keys.FieldWorker, keys.FieldLeaseStart).Result()
			if err != nil {
				t.Fatal(err)
			}
			if left[0] != nil || left[1] != nil {
				t.Fatalf("leased to new-worker, the job still holds an older release's worker %v and lease start %v", left[0], left[1])
			}
		})
	}
}
