package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/chaos"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// The offer tests run on miniredis and one redis-server: a worker on a
// cluster makes no offer (runtime), and a cluster node's PUBLISH counts
// only its own subscribers.
func offerBackends(t *testing.T) []backend {
	return backends(t)[:2]
}

// offered is a fixture with a subscription to one offer channel.
type offered struct {
	*fixture
	ch string
	ps *redis.PubSub
}

func newOffered(t *testing.T, b backend) *offered {
	t.Helper()
	f := newFixture(t, b)
	o := &offered{fixture: f, ch: keys.PushChannel(f.st.NS(), f.st.NewLocal())}
	o.ps = f.rdb.Subscribe(f.ctx, o.ch)
	if _, err := o.ps.Receive(f.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.ps.Close() })
	return o
}

// claimOffering claims up to n jobs as worker, offering k.
func (o *offered) claimOffering(n, k int, worker, nonce string) store.ClaimResult {
	o.t.Helper()
	res, err := o.st.Claim(o.ctx, o.p, store.ClaimRequest{
		N: n, Lease: 30 * time.Second, KindLease: map[string]time.Duration{"long": time.Minute}, Worker: worker,
		Nonce: nonce, PromoteLimit: 100, Offer: k, OfferChannel: o.ch, OfferFor: time.Second,
	})
	if err != nil {
		o.t.Fatalf("claim: %v", err)
	}
	return res
}

// plain is a job with every option at its default: one an offer takes.
func plain(local string) store.NewJob {
	return store.NewJob{Local: local, Kind: "k", Payload: []byte("payload-" + local), MaxAttempts: store.DefaultMaxAttempts}
}

// pushes reads what was pushed to the channel up to a marker the test
// publishes after it: a push sent twice would show.
func (o *offered) pushes() []store.Push {
	o.t.Helper()
	if err := o.rdb.Publish(o.ctx, o.ch, "marker").Err(); err != nil {
		o.t.Fatal(err)
	}
	var out []store.Push
	for {
		m, err := o.ps.ReceiveTimeout(o.ctx, 5*time.Second)
		if err != nil {
			o.t.Fatalf("receive: %v", err)
		}
		msg, ok := m.(*redis.Message)
		if !ok {
			continue
		}
		if msg.Payload == "marker" {
			return out
		}
		p, err := store.DecodePush(msg.Payload, "w")
		if err != nil {
			o.t.Fatalf("decode push: %v", err)
		}
		out = append(out, p)
	}
}

func (o *offered) idleFlag() string {
	o.t.Helper()
	v, err := o.rdb.Get(o.ctx, o.p.Idle()).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	if err != nil {
		o.t.Fatal(err)
	}
	return v
}

// TestOfferPushesPlainJobs: after a worker's claim ran dry with an offer
// of 2, the next two plain jobs are leased to it by their enqueues and
// published to it, each as a claim answers it, with a lease the worker
// acks; the third is listed and wakes the workers as without an offer.
func TestOfferPushesPlainJobs(t *testing.T) {
	t.Parallel()
	for _, b := range offerBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			o := newOffered(t, b)
			if res := o.claimOffering(5, 2, "w", "n1"); !res.Dry || len(res.Jobs) != 0 {
				t.Fatalf("claim of an empty partition: %+v", res)
			}
			if f := o.idleFlag(); !strings.HasSuffix(f, " 30000 n1 "+o.ch+" 1 long 60000 w") || strings.Fields(f)[1] != "2" {
				t.Fatalf("idle flag %q holds no offer of 2", f)
			}
			long := plain("b")
			long.Kind = "long"
			o.enqueue(plain("a"), long)
			got := o.pushes()
			if len(got) != 1 {
				t.Fatalf("%d messages, want the call's pushes in one", len(got))
			}
			p := got[0]
			if p.WakeChannel != keys.WakeChannel(o.p.NS, o.p.Queue) || p.Partition != o.p.Index || len(p.Jobs) != 2 ||
				!p.OfferMade.Equal(o.clk.Now()) {
				t.Fatalf("push %+v; want 2 jobs of partition %d under an offer made now", p, o.p.Index)
			}
			for i, want := range []struct {
				local, lease string
				d            time.Duration
			}{{"a", "n1.p2=", 30 * time.Second}, {"b", "n1.p1=", time.Minute}} {
				// the lease names its worker and start (store.LeaseHolder)
				want.lease = fmt.Sprintf("w/%d/%s", o.clk.Now().UnixMilli(), want.lease)
				j := p.Jobs[i]
				if j.Local != want.local || j.LeaseID != want.lease || j.Fence != 1 || j.State != "running" ||
					string(j.Payload) != "payload-"+want.local || j.Malformed != nil ||
					!j.LeaseExpiry.Equal(o.clk.Now().Add(want.d)) {
					t.Fatalf("pushed job %+v; want %s under lease %s, fence 1, expiry in %s", j, want.local, want.lease, want.d)
				}
				stored, _ := o.get(want.local)
				if stored.State != "running" || stored.LeaseID != want.lease || stored.Worker != "w" || stored.Fence != 1 ||
					!stored.LeaseStart.Equal(o.clk.Now()) {
					t.Fatalf("stored job %+v: not leased to w under %s", stored, want.lease)
				}
				if r := o.ack(j, store.Ack{Code: store.CodeOK}); r.Err != nil || r.State != "completed" {
					t.Fatalf("ack of a pushed job: %+v", r)
				}
			}
			if f := o.idleFlag(); f != "1" {
				t.Fatalf("idle flag %q after the offer was spent, want 1", f)
			}
			o.enqueue(plain("c"))
			if got := o.pushes(); len(got) != 0 {
				t.Fatalf("a spent offer pushed %+v", got)
			}
			if ids := o.availableOrder(0); len(ids) != 1 || ids[0] != "c" || o.idleFlag() != "" {
				t.Fatalf("available %v, idle flag %q: the third job is not listed with the flag gone", ids, o.idleFlag())
			}
			o.wantStats(map[string]string{"available": "1", "running": "0", "completed": "2"})
		})
	}
}

// TestOfferOnlyWhileListsEmpty: a job listed while an offer stands (not
// plain, or paused, or the offer out of time, or its worker gone, a
// pattern subscription notwithstanding) ends the offer: no later job is
// pushed past it.
func TestOfferOnlyWhileListsEmpty(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		first func(o *offered) store.NewJob
	}{
		{"a job with a priority", func(o *offered) store.NewJob {
			j := plain("first")
			j.Priority = 1
			return j
		}},
		{"a job with a delay is scheduled, and wakes", func(o *offered) store.NewJob {
			j := plain("first")
			j.Delay = time.Minute
			return j
		}},
		{"the offer out of time", func(o *offered) store.NewJob {
			o.clk.Advance(time.Second)
			return plain("first")
		}},
		{"the partition paused", func(o *offered) store.NewJob {
			if _, err := o.st.SetPaused(o.ctx, o.p, true); err != nil {
				o.t.Fatal(err)
			}
			return plain("first")
		}},
		{"nobody subscribed", func(o *offered) store.NewJob {
			// a tool's pattern subscription is no worker's
			pat := o.rdb.PSubscribe(o.ctx, o.st.NS()+":push:*")
			if _, err := pat.Receive(o.ctx); err != nil {
				o.t.Fatal(err)
			}
			o.t.Cleanup(func() { pat.Close() })
			if err := o.ps.Unsubscribe(o.ctx, o.ch); err != nil {
				o.t.Fatal(err)
			}
			for { // until the unsubscription is confirmed
				m, err := o.ps.ReceiveTimeout(o.ctx, 5*time.Second)
				if err != nil {
					o.t.Fatal(err)
				}
				if s, ok := m.(*redis.Subscription); ok && s.Kind == "unsubscribe" {
					break
				}
			}
			return plain("first")
		}},
	}
	for _, b := range offerBackends(t) {
		for _, c := range cases {
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				o := newOffered(t, b)
				o.claimOffering(5, 5, "w", "n1")
				o.enqueue(c.first(o))
				o.enqueue(plain("second"))
				if c.name == "nobody subscribed" {
					if o.idleFlag() != "" {
						t.Fatalf("idle flag %q: the offer of a worker gone stays", o.idleFlag())
					}
					if ids := o.availableOrder(0); len(ids) != 2 {
						t.Fatalf("available %v, want both jobs listed", ids)
					}
					return
				}
				if got := o.pushes(); len(got) != 0 {
					t.Fatalf("pushed %s past a job listed before it", got[0].Jobs[0].Local)
				}
				if f := o.idleFlag(); f != "" && f != "1" {
					t.Fatalf("idle flag %q: the offer stays after a job was listed", f)
				}
				stored, _ := o.get("second")
				if stored.State != "available" {
					t.Fatalf("second job %s, want available", stored.State)
				}
			})
		}
	}
}

// TestOfferOfAnotherWorker: the worker's own next claim on the partition
// replaces its offer; so does another worker's claim that runs dry, and
// one that makes no offer leaves the bare flag.
func TestOfferOfAnotherWorker(t *testing.T) {
	t.Parallel()
	for _, b := range offerBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			o := newOffered(t, b)
			o.claimOffering(5, 3, "w", "n1")
			o.claimOffering(5, 1, "w", "n2")
			o.enqueue(plain("a"))
			got := o.pushes()
			if len(got) != 1 || store.LeaseNonce(got[0].Jobs[0].LeaseID) != "n2" || !strings.HasSuffix(got[0].Jobs[0].LeaseID, "n2.p1=") {
				t.Fatalf("pushes %+v, want a under the newer offer's lease n2.p1=", got)
			}
			o.claimOffering(5, 2, "w", "n3")
			o.claim(5, "other") // no offer
			if f := o.idleFlag(); f != "1" {
				t.Fatalf("idle flag %q after a claim without an offer, want 1", f)
			}
			o.enqueue(plain("b"))
			if got := o.pushes(); len(got) != 0 {
				t.Fatalf("pushed %+v under an offer a later claim replaced", got)
			}
		})
	}
}

// TestOfferCorruptFlag: an idle flag that holds no offer Sluice wrote
// (a truncated one, words for numbers, another type) is no offer: the
// job is listed and the flag deleted as ever.
func TestOfferCorruptFlag(t *testing.T) {
	t.Parallel()
	for _, b := range offerBackends(t) {
		for _, v := range []string{"99999999999999 2 1 30000 n1", "x y z 1 n1 ch 0 w", "99999999999999 2 1 30000 n1 ch 1 long w",
			"99999999999999 2 1 30000 n1 ch 0 ", "99999999999999 -1 1 30000 n1 ch 0 w", "99999999999999 2 1 0 n1 ch 0 w",
			"1e14 2 1 30000 n1 ch 0 w", "99999999999999 2 0x1 30000 n1 ch 0 w",
			"99999999999999  2 1 30000 n1 ch 0 w", "99999999999999 2 1 30000\tn1 ch 0 w",
			// a nonce of 8 MiB: miniredis's pattern matcher recurses per
			// character, and matching all of it overflowed its stack
			"99999999999999 2 1 30000 " + strings.Repeat("n", 8<<20) + " ch 0 w",
			"99999999999999 2 1 30000 n1 elsewhere:push:x 0 w"} { // the last, a channel of another namespace
			t.Run(b.name, func(t *testing.T) {
				o := newOffered(t, b)
				if err := o.rdb.Set(o.ctx, o.p.Idle(), strings.Replace(v, "ch", o.ch, 1), 0).Err(); err != nil {
					t.Fatal(err)
				}
				o.enqueue(plain("a"))
				if got := o.pushes(); len(got) != 0 {
					t.Fatalf("flag %.80q pushed %+v", v, got)
				}
				if ids := o.availableOrder(0); len(ids) != 1 || o.idleFlag() != "" {
					t.Fatalf("flag %.80q: available %v, flag after %.80q", v, ids, o.idleFlag())
				}
			})
		}
		t.Run(b.name+"/hash", func(t *testing.T) {
			o := newOffered(t, b)
			if err := o.rdb.HSet(o.ctx, o.p.Idle(), "a", "b").Err(); err != nil {
				t.Fatal(err)
			}
			o.enqueue(plain("a"))
			if ids := o.availableOrder(0); len(ids) != 1 {
				t.Fatalf("idle flag of another type: available %v", ids)
			}
		})
	}
}

// TestOfferEnqueueResent: an enqueue that pushed, delivered twice (its
// reply lost, or the call doubled), pushes once: the second run answers
// from the call's record, and the offer's count falls by one.
func TestOfferEnqueueResent(t *testing.T) {
	t.Parallel()
	for _, kind := range []chaos.FaultKind{chaos.DropReply, chaos.Duplicate} {
		t.Run(kind.String(), func(t *testing.T) {
			l := newLossy(t)
			o := &offered{fixture: l.fixture, ch: keys.PushChannel(l.st.NS(), l.st.NewLocal())}
			o.ps = l.rdb.Subscribe(l.ctx, o.ch)
			if _, err := o.ps.Receive(l.ctx); err != nil {
				t.Fatal(err)
			}
			defer o.ps.Close()
			o.claimOffering(5, 3, "w", "n1")
			check := l.fault(kind)
			o.enqueue(plain("a"))
			check()
			if got := o.pushes(); len(got) != 1 || got[0].Jobs[0].LeaseID != fmt.Sprintf("w/%d/n1.p3=", o.clk.Now().UnixMilli()) {
				t.Fatalf("pushes %+v, want one, under n1.p3=", got)
			}
			if f := o.idleFlag(); !strings.Contains(f, " 30000 n1 ") || strings.Fields(f)[1] != "2" {
				t.Fatalf("idle flag %q, want the offer at 2", f)
			}
			o.wantStats(map[string]string{"running": "1", "available": "0"})
		})
	}
}

// TestOfferPushThenDebounce: one enqueue call pushes a plain job, then
// folds a duplicate into a unique job with Debounce, which moves the
// holder's run time and wakes the workers (schedule_at) in the middle of
// the call, ending the offer. The pushed job is still written as pushed,
// under its lease, and the holder's run time moved: the end of the offer
// mid-call lost neither (the push's writes once read the offer's worker
// from the offer itself, gone by then, and the call failed).
func TestOfferPushThenDebounce(t *testing.T) {
	t.Parallel()
	for _, b := range offerBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			o := newOffered(t, b)
			holder := plain("h")
			holder.Unique, holder.Delay = store.Unique{Key: "u", OnDuplicate: "debounce"}, time.Minute
			o.enqueue(holder)
			o.claimOffering(5, 2, "w", "n1")
			dup := plain("d")
			dup.Unique, dup.Delay = store.Unique{Key: "u", OnDuplicate: "debounce"}, 2*time.Minute
			res, err := o.st.Enqueue(o.ctx, o.p, []store.NewJob{plain("a"), dup})
			if err != nil || len(res) != 2 || res[0].Status != store.Added || res[1].Status != store.Held || res[1].Existing != "h" {
				t.Fatalf("enqueue: %+v %v; want a added, d folded into h", res, err)
			}
			if got := o.pushes(); len(got) != 1 || len(got[0].Jobs) != 1 || got[0].Jobs[0].Local != "a" {
				t.Fatalf("pushes %+v, want a", got)
			}
			a, _ := o.get("a")
			if a.State != "running" || a.Worker != "w" || a.LeaseID != fmt.Sprintf("w/%d/n1.p2=", o.clk.Now().UnixMilli()) {
				t.Fatalf("a %+v: not leased to w under n1.p2=", a)
			}
			if at, ok := o.due("h"); !ok || int64(at) != o.clk.Now().Add(2*time.Minute).UnixMilli() {
				t.Fatalf("h due at %v (%v), want its run time moved 2 minutes on", at, ok)
			}
		})
	}
}
