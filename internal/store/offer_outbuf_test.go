package store_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/store"
)

// TestOfferBurstOfBigPayloads: a worker offering 48 (Concurrency and
// ClaimBatch 48) does not read its subscription for a moment (a GC pause,
// a starved CPU) while one EnqueueMany of 48 jobs at the default
// MaxPayload (1 MiB) is enqueued. Pushed, they would pass redis-server's
// default pub/sub output buffer hard limit (32 MB) and Redis would close
// the worker's subscription, wake-ups and all, every job in it leased to
// a worker that never hears of it (found by a review): a payload kept in
// its own key is never pushed, and no job is leased undelivered.
func TestOfferBurstOfBigPayloads(t *testing.T) {
	t.Parallel()
	b := offerBackends(t)[1] // redis-server: miniredis has no output buffer limit
	o := newOffered(t, b)
	if res := o.claimOffering(48, 48, "w", "n1"); !res.Dry {
		t.Fatalf("claim: %+v", res)
	}
	jobs := make([]store.NewJob, 48)
	for i := range jobs {
		jobs[i] = plain(fmt.Sprintf("j%02d", i))
		jobs[i].Payload = bytes.Repeat([]byte{'a' + byte(i%26)}, 1<<20-64)
	}
	o.enqueue(jobs...)
	if err := o.rdb.Publish(o.ctx, o.ch, "marker").Err(); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	var recvErr error
	for {
		m, err := o.ps.ReceiveTimeout(o.ctx, 5*time.Second)
		if err != nil {
			recvErr = err
			break
		}
		msg, ok := m.(*redis.Message)
		if !ok {
			continue
		}
		if msg.Payload == "marker" {
			break
		}
		p, err := store.DecodePush(msg.Payload, "w")
		if err != nil {
			t.Fatalf("decode push: %v", err)
		}
		for _, j := range p.Jobs {
			got[j.Local] = true
		}
	}
	var lost []string
	for _, j := range jobs {
		stored, _ := o.get(j.Local)
		if stored.State == "running" && !got[j.Local] {
			lost = append(lost, j.Local)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d jobs leased to the offer's worker and never delivered to it (subscriber: %v): %v",
			len(lost), recvErr, lost)
	}
}
