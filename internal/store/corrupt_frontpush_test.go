package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestFrontPushOntoCorruptList: push_ready (lib_ready.lua) puts a job
// at the FRONT of its preferred worker's pin list; that LPUSH was a
// redis.call, where the deferred back pushes (flush_pushes) set a corrupt
// list aside. A job handed back at shutdown (ack 'release'), a pinned
// waiter that a concurrency slot lets go (cc_release -> requeue_front),
// or an available job an operator reroutes, whose pin list holds no list,
// made the call raise after its earlier writes: the released job marked
// available on no list, the waiter popped off its wait list and on no
// list, the worker's whole ack batch failed; a reroute wrote the job's
// new worker and left it listed nowhere. A sticky 'any' fallback's push
// to the shared list of its priority did the same in a claim. Now the
// list's value is set aside and the job is pushed onto a fresh one; the
// batch's other outcomes apply.
func TestFrontPushOntoCorruptList(t *testing.T) {
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
			if res[0].State != "completed" || res[1].State != "available" || res[2].State != "completed" {
				t.Fatalf("ack %+v, want x and z completed, p available", res)
			}
			f.checkPinList("w", "p")
			if got := f.claimed("n2"); !slices.Equal(got, []string{"p"}) {
				t.Errorf("w claimed %v, want p", got)
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
			f.checkPinList("w2", "pw")
		})
		t.Run(b.name+"/reroute", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "r"})
			f.overwrite(f.p.Pinned("w2"))
			if _, err := f.st.Reroute(f.ctx, f.ref("r"), store.Sticky{Worker: "w2", Mode: "w"}); err != nil {
				t.Fatalf("reroute: %v", err)
			}
			f.checkPinList("w2", "r")
		})
		t.Run(b.name+"/any fallback, list 0", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a", Sticky: store.Sticky{Worker: "gone", Mode: "a", After: time.Second}})
			f.overwrite(f.p.Available(0))
			f.clk.Advance(2 * time.Second)
			if got := f.claimed("n1"); !slices.Equal(got, []string{"a"}) {
				t.Errorf("claimed %v, want a (handed to every worker)", got)
			}
			if v := f.rdb.Get(f.ctx, f.p.Aside(keys.AsideList, f.p.Available(0), 1)).Val(); v != "overwritten" {
				t.Errorf("set aside %q, want the overwritten value", v)
			}
		})
	}
}

// checkPinList checks that worker's pin list holds ids, and that the
// string that overwrote it is kept aside.
func (f *fixture) checkPinList(worker string, ids ...string) {
	f.t.Helper()
	pk := f.p.Pinned(worker)
	if l := f.rdb.LRange(f.ctx, pk, 0, -1).Val(); !slices.Equal(l, ids) {
		f.t.Errorf("%s's pin list %v, want %v", worker, l, ids)
	}
	if v := f.rdb.Get(f.ctx, f.p.Aside(keys.AsideList, pk, 1)).Val(); v != "overwritten" {
		f.t.Errorf("set aside %q, want the overwritten value", v)
	}
}
