package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
)

// pauseAfterXRange holds a client's first XRANGE reply until resume closes.
type pauseAfterXRange struct {
	once   sync.Once
	read   chan struct{}
	resume chan struct{}
}

func (h *pauseAfterXRange) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *pauseAfterXRange) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *pauseAfterXRange) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if strings.EqualFold(cmd.Name(), "xrange") {
			h.once.Do(func() {
				close(h.read)
				<-h.resume
			})
		}
		return err
	}
}

// A child in another partition dies (archived: a notification in its
// outbox), is redriven and completes (a second notification). Two workers
// relay that outbox: the first read only the first notification, then
// paused; the second relays both. The first's late delivery of the older
// notification then overwrites the newer one: the parent records the
// child as failed, though it completed last. A notification carries no
// fence or order, so deliver (lib_lifecycle.lua) cannot tell it is stale.
func TestStaleChildNotificationDeliveredOnce(t *testing.T) {
	for _, b := range backends(t) {
		if b.name == "cluster" {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			clk := &testClock{now: epoch}
			cfg := store.Config{
				NS: redistest.NewNamespace(t), RetainCompleted: retainCompleted, RetainArchived: retainArchived,
				RetainCancelled: retainCancelled, CrashLimit: 3, CrashDelay: time.Second, Now: clk.Now,
			}
			st := store.New(b.rdb, cfg)
			f := &fixture{t: t, ctx: context.Background(), rdb: b.rdb, st: st, clk: clk, p: st.Partition("q", 0)}
			hook := &pauseAfterXRange{read: make(chan struct{}), resume: make(chan struct{})}
			slow := redis.NewClient(&redis.Options{Addr: b.rdb.(*redis.Client).Options().Addr})
			t.Cleanup(func() { slow.Close() })
			slow.AddHook(hook)
			stX := store.New(slow, cfg)

			f.enqueue(store.NewJob{Local: "P"})
			g := *f
			g.p = st.Partition("q", 1)
			g.enqueue(store.NewJob{Local: "c", Parent: &store.ParentRef{Ref: keys.Ref{Partition: f.p, Local: "P"}, Step: "s"}})
			c1 := g.claimOne("w")
			if r := g.ack(c1, store.Ack{Code: store.CodeSkip, Message: "first end"}); r.State != "archived" {
				t.Fatalf("skip: %+v", r)
			}
			// relayer X reads the outbox (the first notification) and pauses
			xdone := make(chan error, 1)
			go func() {
				_, err := stX.RelayOutbox(f.ctx, g.p, "", 100)
				xdone <- err
			}()
			<-hook.read
			// the child is redriven and completes
			if errs, err := st.RedriveIDs(f.ctx, g.p, store.ActionRedrive, []string{"c"}); err != nil || errs[0] != nil {
				t.Fatalf("redrive: %v %v", err, errs)
			}
			c2 := g.claimOne("w")
			if r := g.ack(c2, store.Ack{Code: store.CodeOK, Data: []byte("done")}); r.State != "completed" {
				t.Fatalf("ok: %+v", r)
			}
			// relayer Y relays both notifications, in order
			if _, err := st.RelayOutbox(f.ctx, g.p, "", 100); err != nil {
				t.Fatal(err)
			}
			if v := f.rdb.HGet(f.ctx, f.p.Kids("P"), "c").Val(); !strings.HasPrefix(v, "completed") {
				t.Fatalf("after the in-order relay the parent records %q", v)
			}
			close(hook.resume)
			if err := <-xdone; err != nil {
				t.Fatal(err)
			}
			v := f.rdb.HGet(f.ctx, f.p.Kids("P"), "c").Val()
			failed := f.rdb.HGet(f.ctx, f.p.KidCount("P"), "s:f").Val()
			if !strings.HasPrefix(v, "completed") || (failed != "" && failed != "0") {
				t.Errorf("the stale first notification, delivered late, overwrote the child's latest end: kids[c] = %q, failed count %q; want completed, 0", v, failed)
			}
		})
	}
}
