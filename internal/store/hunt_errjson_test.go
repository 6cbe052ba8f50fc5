package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestHuntRecordErrorInfiniteCounter: record_error (lib_lifecycle.lua)
// puts tonumber(attempt) and tonumber(crash_attempt) into the error
// entry it cjson.encodes. Lua's tonumber takes 'inf', 'nan' and '1e400'
// (strtod), and Redis's cjson refuses to encode NaN or Inf: the script
// raises ("Cannot serialise number"), after the writes made before it.
// The corrupt-counter tests use "not a number", which tonumber turns into
// nil, and pass; a counter of "1e400" does not. In an ack batch, the
// retry's record_error runs before its malformed check: the call fails
// after earlier outcomes applied, and every re-send fails again at the
// same job, so the batch's later outcomes never apply. In a maintenance
// pass, reap raises at that job every pass (its run entry is removed
// only at flush): no lease of the partition is reaped again.
// Want: the job alone archived as malformed, the rest of the call done.
func TestHuntRecordErrorInfiniteCounter(t *testing.T) {
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
				if res[0].State != "completed" || res[2].State != "completed" {
					t.Fatalf("send %d: %+v, want x and z completed", send, res)
				}
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
				if pass == 0 && reapedStates(reaped)["good"] != "retryable" {
					t.Fatalf("reaped %+v, want good retryable", reaped)
				}
			}
		})
	}
}
