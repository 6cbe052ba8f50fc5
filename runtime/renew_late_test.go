package runtime_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// TestLateRenewalKeepsExtendedLease: a background renewal of the lease
// (30 s) times out on its way to Redis, and reaches it only after the
// handler's ExtendLease(5m) has run. Redis must keep the 5 minutes the
// worker reckons with. Before, the late renewal set the lease back to 30
// s: the reaper could take the job, and another worker run it, while its
// worker ran on (its writes stayed fenced).
func TestLateRenewalKeepsExtendedLease(t *testing.T) {
	t.Parallel()
	extended := testkit.Chan[error]()
	r := newLeaseRun(t, func(ctx context.Context) { extended <- runtime.ExtendLease(ctx, 5*time.Minute) })
	late := &lateDelivery{match: isScript(lua.Renew, ""), rdb: r.e.RDB, taken: make(chan struct{})}
	r.e.RDB.AddHook(late)
	late.armed.Store(true)

	r.clk.Advance(extendRenew) // the background renewal: fails, not yet delivered
	testkit.Recv(t, (<-chan struct{})(late.taken), "the background renewal to time out")
	close(r.release)
	if err := testkit.Recv(t, extended, "ExtendLease to return"); err != nil {
		t.Fatalf("ExtendLease: %v", err)
	}
	want := r.e.Job(r.id).LeaseExpiry
	if left := want.Sub(r.clk.Now()); left != 5*time.Minute {
		t.Fatalf("after ExtendLease(5m) Redis holds the lease for %s", left)
	}
	if err := late.deliver(); err != nil {
		t.Fatalf("the late renewal: %v", err)
	}
	if got := r.e.Job(r.id).LeaseExpiry; !got.Equal(want) {
		t.Fatalf("after the late renewal Redis holds the lease until %s from now, want %s (ExtendLease's)",
			got.Sub(r.clk.Now()), want.Sub(r.clk.Now()))
	}
}

// lateDelivery is a go-redis hook that fails the first call matching
// match, once armed, as a timeout before Redis ran it, and keeps it:
// deliver sends it then, as a request that reached Redis late.
type lateDelivery struct {
	match       func(cmd redis.Cmder) bool
	rdb         redis.UniversalClient
	armed, took atomic.Bool
	taken       chan struct{}
	args        []any
}

func (l *lateDelivery) deliver() error {
	return l.rdb.Do(context.Background(), l.args...).Err()
}

func (l *lateDelivery) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *lateDelivery) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !l.armed.Load() || !l.match(cmd) || !l.took.CompareAndSwap(false, true) {
			return next(ctx, cmd)
		}
		l.args = cmd.Args()
		close(l.taken)
		err := errors.New("i/o timeout (injected before Redis ran the call)")
		cmd.SetErr(err)
		return err
	}
}

func (l *lateDelivery) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
