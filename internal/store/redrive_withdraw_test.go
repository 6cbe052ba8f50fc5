package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestRedriveWithdrawsChildEnd: a child that ended (archived) is told to
// its parent; redriven, it runs again, and the parent must withdraw the
// end it recorded (record and counts), in the redrive's own script when
// the child lives in the parent's partition, through the outbox
// otherwise. A wait that counted the end waits for the child again. A
// withdrawal told again, or after the new run's end, changes nothing,
// and the old end told late is not recorded over the new one.
func TestRedriveWithdrawsChildEnd(t *testing.T) {
	for _, b := range backends(t) {
		for _, other := range []bool{false, true} {
			name := b.name + "/same-partition"
			if other {
				name = b.name + "/other-partition"
			}
			t.Run(name, func(t *testing.T) {
				f := newFixture(t, b)
				g := *f
				if other {
					g.p = f.st.Partition("q", 1)
				}
				relay := func() {
					t.Helper()
					if _, err := f.st.RelayOutbox(f.ctx, g.p, "", 100); err != nil {
						t.Fatal(err)
					}
				}
				f.enqueue(store.NewJob{Local: "P"})
				parent := keys.Ref{Partition: f.p, Local: "P"}
				g.enqueue(store.NewJob{Local: "a", Parent: &store.ParentRef{Ref: parent, Step: "s"}},
					store.NewJob{Local: "b", Parent: &store.ParentRef{Ref: parent, Step: "s"}})
				p := f.claimOne("w")
				// the parent waits for both
				if r := f.ack(p, store.Ack{Code: store.CodeWait, Message: "s", Data: store.WaitSpec([]string{"a", "b"}),
					Reason: "a", Delay: time.Hour}); r.State != "scheduled" {
					t.Fatalf("wait: %+v", r)
				}
				a := g.claimOne("w")
				if a.Local != "a" {
					t.Fatalf("claimed %s, want a", a.Local)
				}
				if b := g.claimOne("w"); b.Local != "b" { // runs on: the parent waits for it
					t.Fatalf("claimed %s, want b", b.Local)
				}
				if r := g.ack(a, store.Ack{Code: store.CodeSkip, Message: "first end"}); r.State != "archived" {
					t.Fatalf("skip: %+v", r)
				}
				relay()
				wc := func() string { return f.rdb.HGet(f.ctx, f.p.Job("P"), keys.FieldWaitCount).Val() }
				if v := f.rdb.HGet(f.ctx, f.p.Kids("P"), "a").Val(); !strings.HasPrefix(v, "archived") || wc() != "1" {
					t.Fatalf("the parent records a as %q, waits for %s; want archived, 1", v, wc())
				}
				var outbox []redis.XMessage
				if errs, err := f.st.RedriveIDs(f.ctx, g.p, store.ActionRedrive, []string{"a"}); err != nil || errs[0] != nil {
					t.Fatalf("redrive: %v %v", err, errs)
				}
				if other {
					outbox = f.rdb.XRange(f.ctx, g.p.Outbox(), "-", "+").Val() // the withdrawal
					relay()
				}
				counts := func() map[string]string {
					out := map[string]string{}
					for k, v := range f.rdb.HGetAll(f.ctx, f.p.KidCount("P")).Val() {
						if !strings.HasPrefix(k, "w:") && !strings.HasPrefix(k, "d:") && v != "0" {
							out[k] = v
						}
					}
					return out
				}
				if v, err := f.rdb.HGet(f.ctx, f.p.Kids("P"), "a").Result(); err != redis.Nil || wc() != "2" || len(counts()) != 0 {
					t.Fatalf("after the redrive the parent records a as %q (%v), counts %v, waits for %s; want none, none, 2", v, err, counts(), wc())
				}
				// it runs again and completes
				if a = g.claimOne("w"); a.Local != "a" {
					t.Fatalf("claimed %s, want a", a.Local)
				}
				if r := g.ack(a, store.Ack{Code: store.CodeOK, Data: []byte("again")}); r.State != "completed" {
					t.Fatalf("ok: %+v", r)
				}
				if other {
					outbox = append(outbox, f.rdb.XRange(f.ctx, g.p.Outbox(), "-", "+").Val()...) // the new end
					relay()
				}
				check := func(when string) {
					t.Helper()
					v := f.rdb.HGet(f.ctx, f.p.Kids("P"), "a").Val()
					if c := counts(); v != "completed\nagain" || c["s"] != "1" || c["s:f"] != "" || wc() != "1" {
						t.Fatalf("%s: the parent records a as %q, counts %v, waits for %s; want its new end, s=1, 1", when, v, c, wc())
					}
				}
				check("after the new end")
				if !other {
					return
				}
				// told again, in any order (a stalled relayer, an entry
				// revived from the dead stream): fresh entries, fresh marks
				for _, m := range [][]redis.XMessage{{outbox[1], outbox[0]}, {outbox[0], outbox[1]}} {
					for _, e := range m {
						if err := f.rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: g.p.Outbox(), Values: e.Values}).Err(); err != nil {
							t.Fatal(err)
						}
					}
					relay()
					check("after the withdrawal and the new end told again")
				}
			})
		}
	}
}
