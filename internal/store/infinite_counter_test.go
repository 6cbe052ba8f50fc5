package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestInfiniteCounterIsTheJobsAlone: a job whose attempt or crash
// counter reads as a number Lua's tonumber takes but cjson and msgpack
// cannot write as an integer ('1e400', 'inf', 'nan': corrupt data) fails
// only itself. record_error (lib_lifecycle.lua) put tonumber of both
// counters into the error entry it cjson.encodes, and Redis's cjson
// refuses Inf and NaN: the script raised after the writes made before
// it. In an ack batch, the retry's record_error ran before its malformed
// check: the call failed after earlier outcomes applied, and every
// re-send failed again at the same job, so the batch's later outcomes
// never applied. In a maintenance pass, reap raised at that job on every
// pass (its run entry is removed only at flush): no lease of the
// partition was reaped again. A re-sent claim packed a leased job's
// fence as tonumber read it: NaN, where the worker decodes an integer.
func TestInfiniteCounterIsTheJobsAlone(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name+"/ack batch, retry", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "x"}, store.NewJob{Local: "y"}, store.NewJob{Local: "z"})
			held := f.claimLeases(3, "w")
			f.rdb.HSet(f.ctx, f.p.Job("y"), keys.FieldAttempt, "1e400")
			bal := f.key("bal")
			acks := []store.Ack{
				{Lease: held["x"], Code: store.CodeOK, Commit: "cx", Effects: []sluicetype.Effect{fx("INCRBY", bal, "1")}},
				{Lease: held["y"], Code: store.CodeRetry, Delay: time.Second, Message: "boom", Reason: "error"},
				{Lease: held["z"], Code: store.CodeOK},
			}
			for send := range 2 { // the call, then a re-send of it
				res, _, err := f.st.Ack(f.ctx, f.p, acks)
				if err != nil {
					t.Fatalf("send %d: %v (want y alone archived; x is %q, z is %q)", send, err, f.rawState("x"), f.rawState("z"))
				}
				if res[0].State != "completed" || res[1].State != "archived" || res[2].State != "completed" {
					t.Fatalf("send %d: %+v, want x and z completed, y archived", send, res)
				}
			}
		})
		t.Run(b.name+"/claim re-sent", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "bad"}, store.NewJob{Local: "good"})
			calls := &lastCall{}
			f.rdb.AddHook(calls)
			f.claim(2, "w")
			claim := calls.args
			f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldFence, "nan")
			reply, err := f.rdb.Do(f.ctx, claim...).Slice()
			if err != nil || len(reply) != 3 {
				t.Fatalf("claim re-sent: %v %v, want its leased jobs", reply, err)
			}
			var jobs [][]any
			if err := msgpack.Unmarshal([]byte(reply[2].(string)), &jobs); err != nil {
				t.Fatal(err)
			}
			if len(jobs) != 1 || jobs[0][0] != "good" {
				t.Fatalf("re-sent claim answered %v, want good alone (bad's fence is no count)", jobs)
			}
		})
		t.Run(b.name+"/reap", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "bad"}, store.NewJob{Local: "good"})
			f.claim(2, "w")
			f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldCrashAttempt, "inf")
			f.clk.Advance(time.Minute) // past the 30 s leases
			for pass := range 2 {
				reaped, err := f.reap(10)
				if err != nil {
					t.Fatalf("pass %d: %v (want bad archived alone, good reaped; good is %q)", pass, err, f.rawState("good"))
				}
				if st := reapedStates(reaped); pass == 0 && (st["good"] != "retryable" || st["bad"] != "archived") {
					t.Fatalf("reaped %+v, want good retryable, bad archived", reaped)
				}
			}
		})
	}
}

// lastCall is a go-redis hook that keeps the arguments of the last
// script call, to send it again as go-redis does after a lost reply.
type lastCall struct{ args []any }

func (*lastCall) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *lastCall) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		switch cmd.Name() {
		case "fcall", "evalsha", "eval":
			if err == nil {
				c.args = cmd.Args()
			}
		}
		return err
	}
}

func (*lastCall) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
