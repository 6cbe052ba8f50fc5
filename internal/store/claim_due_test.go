package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
)

// dueAt is the store time at which a claim that ran at now says its
// partition's next job comes due (ClaimResult.NextDue is a delay from
// then); zero when nothing is scheduled.
func dueAt(res store.ClaimResult, now time.Time) time.Time {
	if !res.Scheduled {
		return time.Time{}
	}
	return now.Add(res.NextDue)
}

// storeTimeFixture is a fixture on miniredis whose store time is Redis
// TIME (no injected clock), an hour behind the host's: a worker's clock
// may be that far off from Redis's.
func storeTimeFixture(t *testing.T) (*fixture, *miniredis.Miniredis, *redis.Client, time.Time) {
	m := miniredis.RunT(t)
	now := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	m.SetTime(now)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	st := store.New(rdb, store.Config{NS: redistest.NewNamespace(t), RetainCompleted: retainCompleted,
		RetainArchived: retainArchived, RetainCancelled: retainCancelled, CrashLimit: 3, CrashDelay: time.Second})
	return &fixture{t: t, ctx: context.Background(), rdb: rdb, st: st, p: st.Partition("q", 0)}, m, rdb, now
}

// TestClaimAnswersNextDueAsDelay: a claim that runs dry answers how long
// after it ran its partition's next job comes due, in store time, not
// when: a worker adds that to the time it sent the claim by its own
// clock, which may be off from Redis's. (As a store time, compared with
// the clock of a worker an hour ahead of Redis, it was always past: an
// idle worker claimed without pause.) Nothing scheduled is no delay.
func TestClaimAnswersNextDueAsDelay(t *testing.T) {
	t.Parallel()
	f, _, _, _ := storeTimeFixture(t)
	if res := f.claim(5, "w"); !res.Dry || res.Scheduled {
		t.Fatalf("claim of an empty partition = %+v, want dry with nothing scheduled", res)
	}
	f.enqueue(store.NewJob{Local: "soon", Delay: 3 * time.Second})
	if res := f.claim(5, "w"); !res.Dry || !res.Scheduled || res.NextDue != 3*time.Second {
		t.Fatalf("claim before the job is due = %+v, want dry, next due in 3s", res)
	}
}

// resendClaim is a go-redis hook that runs each claim call, moves
// miniredis's clock on by after, and runs the call again, answering the
// second run: a re-send that reaches Redis late.
type resendClaim struct {
	m     *miniredis.Miniredis
	at    time.Time // miniredis's time
	after time.Duration
}

func (h resendClaim) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h resendClaim) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := next(ctx, cmd); err != nil || len(cmd.Args()) < 2 || !lua.Claim.Is(cmd.Name(), fmt.Sprint(cmd.Args()[1])) {
			return err
		}
		h.m.SetTime(h.at.Add(h.after))
		return next(ctx, cmd)
	}
}

func (h resendClaim) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestResentClaimAnswersFirstDelay: a claim whose re-send reaches Redis
// 2 s after its first run is answered from the call's record with the
// delay the first run computed, from its own time: the worker adds it to
// when it first sent the claim, which the first run is the closer to.
func TestResentClaimAnswersFirstDelay(t *testing.T) {
	t.Parallel()
	f, m, rdb, now := storeTimeFixture(t)
	f.enqueue(store.NewJob{Local: "soon", Delay: 3 * time.Second}, store.NewJob{Local: "now"})
	rdb.AddHook(resendClaim{m: m, at: now, after: 2 * time.Second})
	res := f.claim(5, "w")
	if len(res.Jobs) != 1 || res.Jobs[0].Local != "now" || !res.Dry || !res.Scheduled || res.NextDue != 3*time.Second {
		t.Fatalf("re-sent claim = %+v (jobs %v), want the job now leased and next due in 3s, as first answered", res, res.Jobs)
	}
}
