package step_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// zombieState is everything the zombie could write to: the job, its steps,
// errors and place in the partition, both ledgers, the outbox and the
// markers of relayed effects.
type zombieState struct {
	Job       map[string]string
	Steps     map[string]string
	Errors    []string
	Running   []string
	Completed []string
	Stats     map[string]string
	Local     map[string]string
	Foreign   map[string]string
	Outbox    int64
	Dead      int64
	Marks     []string
}

func readZombieState(t *testing.T, rdb redis.UniversalClient, ns string, ref keys.Ref) zombieState {
	t.Helper()
	ctx := context.Background()
	var s zombieState
	var err error
	get := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	get(func() (e error) { s.Job, e = rdb.HGetAll(ctx, ref.Job(ref.Local)).Result(); return })
	get(func() (e error) { s.Steps, e = rdb.HGetAll(ctx, ref.Steps(ref.Local)).Result(); return })
	get(func() (e error) { s.Errors, e = rdb.LRange(ctx, ref.Errors(ref.Local), 0, -1).Result(); return })
	get(func() (e error) { s.Running, e = rdb.ZRange(ctx, ref.Running(), 0, -1).Result(); return })
	get(func() (e error) { s.Completed, e = rdb.ZRange(ctx, ref.Terminal("completed"), 0, -1).Result(); return })
	get(func() (e error) { s.Stats, e = rdb.HGetAll(ctx, ref.Stats()).Result(); return })
	get(func() (e error) { s.Local, e = rdb.HGetAll(ctx, ref.Tag()+":u:ledger").Result(); return })
	get(func() (e error) { s.Foreign, e = rdb.HGetAll(ctx, foreignLedger(ns)).Result(); return })
	get(func() (e error) { s.Outbox, e = rdb.XLen(ctx, ref.Outbox()).Result(); return })
	get(func() (e error) { s.Dead, e = rdb.XLen(ctx, ref.Outbox()+":dead").Result(); return })
	get(func() (e error) { s.Marks, e = rdb.Keys(ctx, ns+":fx:*").Result(); return })
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(s.Marks)
	return s
}

// TestZombieWritesAreRejected: a worker process commits step s1 of a job,
// then its handler blocks; the process is SIGSTOPped past its 1 s lease. A
// second worker reclaims the job (fence 2) and finishes it. Then the first
// process is resumed and its handler, ignoring its cancelled context, tries
// to commit step s2, advance and finish a cursor (each with an effect in
// the job's slot and a relayed one) and to complete the job with effects:
// every write is refused by the fence, and nothing the second worker left
// changes.
func TestZombieWritesAreRejected(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := shared.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Enqueue(ctx, zombieJob{})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := keys.ParseRef(ns, res.ID)

	unblockR, unblockW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unblockW.Close() })
	cfg := fastLeases("zombie", ns, shared.Server.Addr())
	cfg.Concurrency = 1
	zombie := startProc(t, cfg, unblockR)
	unblockR.Close()
	if line := zombie.waitLine(t, "blocked "); line != "blocked "+res.ID+" 1" {
		t.Fatalf("child: %q, want it blocked in job %s at fence 1", line, res.ID)
	}
	info, err := c.Job(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != flow.StateRunning || info.Fence != 1 || info.LeaseHolder != zombie.id || info.CurrentStep != "s1" {
		t.Fatalf("before the stop: %s fence %d holder %q step %q; want running, 1, %q, s1", info.State, info.Fence, info.LeaseHolder, info.CurrentStep, zombie.id)
	}
	zombie.signal(t, syscall.SIGSTOP)
	stopped := time.Now()

	second := testkit.StartWorker(t, rdb, zombieRegistry(ns, zombieHooks{}), runtime.Options{
		Namespace: ns, Lease: time.Second, RenewInterval: 300 * time.Millisecond,
		MaintenanceInterval: 200 * time.Millisecond, Backoff: noBackoff,
	}, nil)
	info = testkit.WaitState(t, c, second.Sig, res.ID, flow.StateCompleted)
	reclaimed := time.Since(stopped)
	testkit.Until(t, &second.Sig.Relayed, nil, "completion effects relayed", func() (bool, string) {
		n := rdb.XLen(ctx, ref.Outbox()).Val()
		return n == 0, fmt.Sprintf("%d outbox entries", n)
	})
	if err := second.Stop(); err != nil {
		t.Errorf("the second worker: %v", err)
	}
	if info.Fence != 2 || info.CrashAttempt != 1 || info.Attempt != 0 || info.Orphan.Holder != zombie.id {
		t.Fatalf("after the second worker: fence %d crash_attempt %d attempt %d orphan %+v; want 2, 1, 0, held by %s",
			info.Fence, info.CrashAttempt, info.Attempt, info.Orphan, zombie.id)
	}
	before := readZombieState(t, rdb, ns, ref)
	ledger := map[string]string{"s1": "1", "s2": "1", "rows": "10", "final": "1"}
	if diff := cmp.Diff(ledger, before.Local); diff != "" {
		t.Errorf("ledger in the job's slot (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ledger, before.Foreign); diff != "" {
		t.Errorf("relayed ledger (-want +got):\n%s", diff)
	}
	var fields []string
	for f := range before.Steps {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	if diff := cmp.Diff([]string{"cursor:rows", "rows", "s1", "s2"}, fields); diff != "" {
		t.Errorf("checkpoints (-want +got):\n%s", diff)
	}

	// The zombie wakes up: its renewal finds the lease gone and its handler
	// carries on regardless.
	zombie.signal(t, syscall.SIGCONT)
	if _, err := unblockW.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	zombie.waitLine(t, "zombie complete ")
	for _, what := range []string{"s2", "advance", "finish"} {
		got := zombie.out.Matching("zombie " + what + " ")
		if len(got) != 1 || !strings.HasPrefix(got[0], "zombie "+what+" stale=true ") {
			t.Errorf("zombie's %s: %q, want refused with ErrStale", what, got)
		}
	}
	// A graceful stop: whatever it would still write (an ack) is written
	// before it exits.
	zombie.stop(t)
	after := readZombieState(t, rdb, ns, ref)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the zombie changed Redis (-before +after):\n%s", diff)
	}
	info, err = c.Job(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != flow.StateCompleted || info.Fence != 2 {
		t.Errorf("job after the zombie: %s fence %d, want completed at fence 2", info.State, info.Fence)
	}
	t.Logf("reclaimed %s after SIGSTOP; zombie: %q", reclaimed.Round(time.Millisecond), zombie.out.Matching("unblocked"))
}
