package store_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/store"
)

// TestAckResentPastTheStoreKeep: a worker sends an ack whose reply was
// lost again, the same call, until its attempt's lease runs out (runtime's
// flushAcks), which with a long lease outlasts the store's keep of call
// records. A completion that ran and deleted its job (completed jobs
// discarded) has nothing left for the script to recognise, so a try after
// the record was gone answered stale, and the worker reported a lost lease
// for a job that completed (found by an audit). The ack's record is now
// kept as long as its Resend; one without keeps the store's, and its late
// try is still answered stale.
func TestAckResentPastTheStoreKeep(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		resend time.Duration
		want   string
	}{
		{"resend for the lease", 10 * time.Minute, "completed"},
		{"no resend given", 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := miniredis.RunT(t)
			rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
			t.Cleanup(func() { rdb.Close() })
			f := discarding(t, backend{"miniredis", rdb})
			j := f.runningJob()
			a := []store.Ack{{Lease: lease(j), Code: store.CodeOK, Resend: c.resend}}
			if res, _, err := f.st.Ack(f.ctx, f.p, a); err != nil || res[0].State != "completed" {
				t.Fatalf("ack: %+v %v", res, err)
			}
			m.FastForward(4 * time.Minute) // past the store's keep, within the lease
			res, _, err := f.st.Ack(f.ctx, f.p, a)
			if err != nil || res[0].State != c.want || (c.want == "" && res[0].Err == nil) {
				t.Fatalf("the same ack four minutes later: %+v %v; want %q", res, err, c.want)
			}
		})
	}
}

// TestAckRecordKeptForItsResend: on a real Redis, an ack's record lives as
// long as its Resend when that is longer than the store's keep, and every
// ack of a call gives the call that keep.
func TestAckRecordKeptForItsResend(t *testing.T) {
	t.Parallel()
	c := env.Server.Client()
	t.Cleanup(func() { c.Close() })
	f := discarding(t, backend{"redis", c})
	f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"})
	res := f.claim(2, "w")
	if len(res.Jobs) != 2 {
		t.Fatalf("claim: %+v", res)
	}
	acks := []store.Ack{
		{Lease: lease(res.Jobs[0]), Code: store.CodeOK, Resend: time.Hour},
		{Lease: lease(res.Jobs[1]), Code: store.CodeOK, Resend: time.Minute},
	}
	if out, _, err := f.st.Ack(f.ctx, f.p, acks); err != nil || out[0].State != "completed" || out[1].State != "completed" {
		t.Fatalf("ack: %+v %v", out, err)
	}
	long, all := 0, 0
	for iter := f.rdb.Scan(f.ctx, 0, f.p.Call("*"), 100).Iterator(); iter.Next(f.ctx); {
		all++
		if ttl := f.rdb.PTTL(f.ctx, iter.Val()).Val(); ttl > 30*time.Minute {
			long++
		}
	}
	if long != 1 {
		t.Fatalf("%d of %d call records kept over half an hour, want the ack's", long, all)
	}
}
