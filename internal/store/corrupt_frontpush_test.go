package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestFrontPushOntoCorruptPinList: push_ready (lib_ready.lua) puts a job
// at the FRONT of its preferred worker's pin list with redis.call LPUSH;
// only the deferred back pushes (flush_pushes) set a corrupt list aside.
// A job handed back at shutdown (ack 'release'), or a pinned waiter that
// a concurrency slot lets go (cc_release -> requeue_front), whose pin
// list holds no list, makes the ack raise after the batch's earlier
// outcomes were written: the released job is marked available on no list
// (lost), the waiter popped off its wait list and on no list (lost), and
// the worker's whole ack batch fails. Want: the ack succeeds, the bad
// job alone is dealt with.
func TestFrontPushOntoCorruptPinList(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name+"/release", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "x"}, store.NewJob{Local: "p", Sticky: store.Sticky{Worker: "w", Mode: "w"}},
				store.NewJob{Local: "z"})
			held := f.claimLeases(3, "w")
			if len(held) != 3 {
				t.Fatalf("claimed %v, want 3", held)
			}
			f.overwrite(f.p.Pinned("w"))
			bal := f.key("bal")
			res, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{
				{Lease: held["x"], Code: store.CodeOK, Commit: "cx", Effects: []sluicetype.Effect{fx("INCRBY", bal, "1")}},
				{Lease: held["p"], Code: store.CodeRelease},
				{Lease: held["z"], Code: store.CodeOK},
			})
			if err != nil {
				t.Fatalf("ack: %v (want p handled alone; p is %q, list 0 %v)", err, f.rawState("p"), f.availableOrder(0))
			}
			if res[0].State != "completed" || res[2].State != "completed" {
				t.Fatalf("ack %+v, want x and z completed", res)
			}
		})
		t.Run(b.name+"/pinned waiter let go", func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			f.enqueue(store.NewJob{Local: "a", Limits: lim}, store.NewJob{Local: "z"})
			held := f.claimLeases(2, "w")
			f.enqueue(store.NewJob{Local: "pw", Limits: lim, Sticky: store.Sticky{Worker: "w2", Mode: "w"}})
			if r, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 10, Lease: 30 * time.Second, Worker: "w2", Nonce: "n-w2", PromoteLimit: 100}); err != nil || len(r.Jobs) != 0 {
				t.Fatalf("w2 claimed %+v, %v; want none (pw waits on k)", r.Jobs, err)
			}
			f.overwrite(f.p.Pinned("w2"))
			res, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{{Lease: held["z"], Code: store.CodeOK}, {Lease: held["a"], Code: store.CodeOK}})
			if err != nil {
				t.Fatalf("ack: %v (want the waiter handled alone; pw is %q, k's wait list %v)", err, f.rawState("pw"),
					f.rdb.LRange(f.ctx, f.p.ConcurrencyWait("k"), 0, -1).Val())
			}
			if res[0].State != "completed" || res[1].State != "completed" {
				t.Fatalf("ack %+v, want both completed", res)
			}
		})
	}
}
