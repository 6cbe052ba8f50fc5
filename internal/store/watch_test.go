package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/chaos"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
)

// doneSub is a subscription to a partition's DoneChannel.
type doneSub struct {
	t  *testing.T
	ps *redis.PubSub
}

// subscribeDone subscribes to f's partition's DoneChannel and returns once
// Redis confirmed the subscription.
func (f *fixture) subscribeDone() *doneSub {
	f.t.Helper()
	ps := f.rdb.Subscribe(f.ctx, f.p.DoneChannel())
	f.t.Cleanup(func() { ps.Close() })
	if _, err := ps.ReceiveTimeout(f.ctx, 10*time.Second); err != nil { // the confirmation
		f.t.Fatalf("subscribe: %v", err)
	}
	return &doneSub{t: f.t, ps: ps}
}

// next returns the next message's payload.
func (d *doneSub) next() string {
	d.t.Helper()
	m, err := d.ps.ReceiveMessage(context.Background())
	if err != nil {
		d.t.Fatalf("receive: %v", err)
	}
	return m.Payload
}

func (f *fixture) watch(local string) (string, error) {
	state, _, err := f.st.Watch(f.ctx, keys.Ref{Partition: f.p, Local: local})
	return state, err
}

// watched reports whether job local carries the watch mark, and whether
// it is in the partition's set of watched jobs.
func (f *fixture) watched(local string) (field, member bool) {
	f.t.Helper()
	n, err := f.rdb.HExists(f.ctx, f.p.Job(local), keys.FieldWatched).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	m, err := f.rdb.SIsMember(f.ctx, f.p.Watching(), local).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	return n, m
}

// TestWatch: watch.lua marks a job that has not finished and answers its
// state; finishing it by any path (ack, cancel, an ack batch with jobs
// nobody watches) publishes its final state and drops the mark; a
// finished job is answered as it is; a missing one is ErrNotFound.
func TestWatch(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			sub := f.subscribeDone()
			if _, err := f.watch("nope"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("watch of a missing job: %v, want ErrNotFound", err)
			}
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"}, store.NewJob{Local: "c"})
			if s, err := f.watch("a"); err != nil || s != "available" {
				t.Fatalf("watch a: %q %v", s, err)
			}
			if field, member := f.watched("a"); !field || !member {
				t.Fatalf("a after watch: field %v, member %v", field, member)
			}
			if s, err := f.watch("a"); err != nil || s != "available" { // twice is fine
				t.Fatalf("watch a again: %q %v", s, err)
			}
			// b is not watched: finishing it publishes nothing, also in
			// the same ack call as a watched job.
			res := f.claim(2, "w1")
			if len(res.Jobs) != 2 {
				t.Fatalf("claimed %d", len(res.Jobs))
			}
			acks := []store.Ack{{Lease: lease(res.Jobs[1]), Code: store.CodeOK}, {Lease: lease(res.Jobs[0]), Code: store.CodeOK, Data: []byte("r")}}
			out, _, err := f.st.Ack(f.ctx, f.p, acks)
			if err != nil || out[0].State != "completed" || out[1].State != "completed" {
				t.Fatalf("ack: %+v %v", out, err)
			}
			if got := sub.next(); got != "completed a" {
				t.Fatalf("message %q, want %q", got, "completed a")
			}
			if field, member := f.watched("a"); field || member {
				t.Fatalf("a after it finished: field %v, member %v", field, member)
			}
			if s, err := f.watch("a"); err != nil || s != "completed" {
				t.Fatalf("watch of a finished job: %q %v", s, err)
			}
			if field, member := f.watched("a"); field || member {
				t.Fatal("watching a finished job marked it")
			}
			// cancel (finish reads the job itself)
			if _, err := f.watch("c"); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.Cancel(f.ctx, keys.Ref{Partition: f.p, Local: "c"}, retainCancelled); err != nil {
				t.Fatal(err)
			}
			if got := sub.next(); got != "cancelled c" {
				t.Fatalf("message %q, want %q", got, "cancelled c")
			}
			// An operator's delete of a watched pending job.
			f.enqueue(store.NewJob{Local: "d x"}) // a space in the ID: the message splits at the first
			if _, err := f.watch("d x"); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.Delete(f.ctx, keys.Ref{Partition: f.p, Local: "d x"}); err != nil {
				t.Fatal(err)
			}
			if got := sub.next(); got != "deleted d x" {
				t.Fatalf("message %q, want %q", got, "deleted d x")
			}
			if n, err := f.rdb.Exists(f.ctx, f.p.Watching()).Result(); err != nil || n != 0 {
				t.Fatalf("the set of watched jobs outlived them: %d %v", n, err)
			}
			states, _, err := f.st.States(f.ctx, []keys.Ref{{Partition: f.p, Local: "a"}, {Partition: f.p, Local: "nope"}, {Partition: f.p, Local: "c"}})
			if err != nil || strings.Join(states, ",") != "completed,,cancelled" {
				t.Fatalf("States: %q %v", states, err)
			}
		})
	}
}

// TestWatchKeepsDiscarded: a watched job is kept WatchKeep after it
// finishes where its retention would delete it at once, and one nobody
// watches is still deleted at once; a reaped job at the crash limit
// (finish through crash) is announced too.
func TestWatchKeepsDiscarded(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			discard := store.New(b.rdb, store.Config{NS: f.st.NS(), RetainCompleted: -1, RetainArchived: -1, CrashLimit: 1, Now: f.clk.Now})
			f.st = discard
			sub := f.subscribeDone()
			f.enqueue(store.NewJob{Local: "w"}, store.NewJob{Local: "u"})
			if _, err := f.watch("w"); err != nil {
				t.Fatal(err)
			}
			res := f.claim(2, "w1")
			for _, j := range res.Jobs {
				if r := f.ack(j, store.Ack{Code: store.CodeOK, Data: []byte("result-" + j.Local)}); r.State != "completed" {
					t.Fatalf("ack %s: %+v", j.Local, r)
				}
			}
			if got := sub.next(); got != "completed w" {
				t.Fatalf("message %q", got)
			}
			if n, _ := f.rdb.Exists(f.ctx, f.p.Job("u")).Result(); n != 0 {
				t.Fatal("the job nobody watched was kept")
			}
			j, _ := f.get("w")
			if j.State != "completed" || string(j.Result) != "result-w" {
				t.Fatalf("kept job: %s %q", j.State, j.Result)
			}
			score, ok := f.score(f.p.Terminal("completed"), "w")
			if want := float64(f.clk.Now().Add(store.WatchKeep).UnixMilli()); !ok || score != want {
				t.Fatalf("deletion time %v (%v), want %v", score, ok, want)
			}
			f.clk.Advance(store.WatchKeep + time.Millisecond)
			if n, err := f.sweep(100); err != nil || n != 1 {
				t.Fatalf("sweep: %d %v", n, err)
			}
			if n, _ := f.rdb.Exists(f.ctx, f.p.Job("w")).Result(); n != 0 {
				t.Fatal("the watched job outlived WatchKeep")
			}
			// reaped at the crash limit: quarantined by finish through crash
			f.enqueue(store.NewJob{Local: "r"})
			if _, err := f.watch("r"); err != nil {
				t.Fatal(err)
			}
			f.claimOne("w2")
			f.clk.Advance(time.Minute)
			if reaped, err := f.reap(10); err != nil || len(reaped) != 1 || reaped[0].State != "quarantined" {
				t.Fatalf("reap: %+v %v", reaped, err)
			}
			if got := sub.next(); got != "quarantined r" {
				t.Fatalf("message %q", got)
			}
		})
	}
}

// TestWatchResend: a watch whose reply was lost is sent again and
// answers what the first run did.
func TestWatchResend(t *testing.T) {
	t.Parallel()
	l := newLossy(t)
	if err := lua.Watch.Load(l.ctx, l.rdb); err != nil {
		t.Fatal(err)
	}
	l.enqueue(store.NewJob{Local: "a"})
	check := l.fault(chaos.DropReply)
	s, err := l.watch("a")
	check()
	if err != nil || s != "available" {
		t.Fatalf("watch: %q %v", s, err)
	}
	if field, member := l.watched("a"); !field || !member {
		t.Fatalf("field %v, member %v", field, member)
	}
}
