package chaos

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/redistest"
)

// envDuration sets how long the faults go on (a Go duration); make chaos
// sets minutes.
const envDuration = "SLUICE_CHAOS_DURATION"

// Fleet set-up: a few workers with short leases.
const (
	fleetSize = 3
	lease     = time.Second
	backlog   = 20 // available jobs the producer keeps
)

// drainTimeout bounds the final worker's drain after the chaos.
const drainTimeout = 3 * time.Minute

// TestChaos runs ledger jobs (four durable steps, each committing fenced
// effects, and a completion effect) on worker processes that reach Redis
// through a TCP proxy, while a producer keeps enqueueing and a controller
// SIGKILLs workers, SIGSTOPs them past their lease and resumes them,
// restarts them gracefully, restarts Redis (append-only, fsync always;
// half the time after a SIGKILL) and cuts every proxied connection. One
// poison pill panics in every attempt. Then a last healthy worker drains
// the queue. Every acknowledged job must be completed with all its
// checkpoints, every effect applied exactly once (a zombie's accepted
// write would apply one twice), the poison pill alone quarantined, and
// each fault injected at least once, including stale writes refused.
func TestChaos(t *testing.T) {
	t.Parallel()
	dur := chaosDuration(t)
	if os.Getenv(redisproc.EnvExternalAddr) != "" {
		t.Skipf("the chaos suite restarts its own redis-server; %s points at an external one", redisproc.EnvExternalAddr)
	}
	ctx := context.Background()
	srv, err := redisproc.StartServer(redisproc.WithAppendOnly())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	proxy, err := NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	rdb := srv.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	poison, err := c.Enqueue(ctx, poisonJob{}, flow.WithQueue(poisonQueue), flow.WithID("poison"))
	if err != nil {
		t.Fatal(err)
	}

	cfg := workerConfig{
		Addr: proxy.Addr(), NS: ns, Concurrency: 4, Lease: lease, Renew: lease / 4, Maintenance: 200 * time.Millisecond,
	}
	f := newFleet(t, cfg)
	for range fleetSize {
		f.start(cfg)
	}
	prod := &producer{c: c, backlog: backlog}
	pctx, stopProducer := context.WithCancel(ctx)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		prod.run(pctx)
	}()
	t.Cleanup(func() {
		stopProducer()
		<-produced
	})

	seed := uint64(time.Now().UnixNano())
	ctl := &controller{
		t: t, rng: rand.New(rand.NewPCG(seed, 0)), fleet: f, srv: srv, proxy: proxy,
		stallFor: lease + time.Second, resumeAt: map[*proc]time.Time{},
	}
	started := time.Now()
	ctl.run(started.Add(dur))
	stopProducer()
	<-produced
	chaosWall := time.Since(started)

	// The drain: the chaos workers shut down gracefully, a healthy one
	// finishes everything.
	for len(f.live) > 0 {
		f.term(f.live[0])
	}
	final := cfg
	final.Concurrency = 16
	last := f.start(final)
	ids, retries, errs := prod.result()
	for _, err := range errs {
		t.Errorf("enqueue: %v", err)
	}
	part := keys.Partition{NS: ns, Queue: "default"}
	redistest.Within(t, drainTimeout, "every job finished and every effect relayed", func() (bool, string) {
		st, err := c.QueueStats(ctx, "default", time.Minute)
		if err != nil {
			return false, err.Error()
		}
		outbox, err := rdb.XLen(ctx, part.Outbox()).Result()
		if err != nil {
			return false, err.Error()
		}
		done := st.Depth[flow.StateCompleted] + st.Depth[flow.StateArchived] + st.Depth[flow.StateQuarantined]
		return done >= int64(len(ids)) && outbox == 0, fmt.Sprintf("%d of %d jobs finished (%v), %d outbox entries", done, len(ids), st.Depth, outbox)
	})
	f.term(last)
	drainWall := time.Since(started) - chaosWall

	// Every job: completed with its four checkpoints, none lost.
	wantSteps := make([]string, ledgerSteps)
	for i := range wantSteps {
		wantSteps[i] = fmt.Sprintf("%s@%d", stepName(i+1), i)
	}
	crashes, crashed, attempts := 0, 0, 0
	for n, id := range ids {
		info, err := c.Job(ctx, id)
		if err != nil {
			t.Errorf("job %d (%s) lost: %v", n, id, err)
			continue
		}
		if info.State != flow.StateCompleted {
			t.Errorf("job %d: %s (%s), crash_attempt %d attempt %d, errors %+v; want completed", n, info.State, info.Reason, info.CrashAttempt, info.Attempt, info.Errors)
		}
		var args ledgerJob
		if err := info.DecodeArgs(&args); err != nil || args.N != n || !bytes.Equal(args.Pad, padFor(n)) {
			t.Errorf("job %d read back as job %d with %d bytes of padding (%v), want %d", n, args.N, len(args.Pad), err, len(padFor(n)))
		}
		var steps []string
		for _, s := range info.Steps {
			steps = append(steps, fmt.Sprintf("%s@%d", s.Name, s.Index))
		}
		if diff := cmp.Diff(wantSteps, steps); diff != "" {
			t.Errorf("job %d checkpoints (-want +got):\n%s", n, diff)
		}
		crashes += info.CrashAttempt
		attempts += info.Attempt
		if info.CrashAttempt > 0 {
			crashed++
		}
	}
	if bad, err := rdb.SMembers(ctx, badPayloads(ns)).Result(); err != nil || len(bad) > 0 {
		t.Errorf("attempts saw wrong padding in jobs %v (%v)", bad, err)
	}
	// Nothing else finished, nothing else exists: quarantine is the poison
	// pill's alone.
	st, err := c.QueueStats(ctx, "default", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	wantDepth := map[string]int64{}
	for s := range st.Depth {
		wantDepth[s] = 0
	}
	wantDepth[flow.StateCompleted] = int64(len(ids))
	if diff := cmp.Diff(wantDepth, st.Depth); diff != "" {
		t.Errorf("ordinary jobs per state (-want +got):\n%s", diff)
	}
	pinfo, err := c.Job(ctx, poison.ID)
	if err != nil {
		t.Fatal(err)
	}
	if pinfo.State != flow.StateQuarantined || pinfo.Reason != "crash_limit" || pinfo.CrashAttempt != poisonCrashLimit || !hasClass(pinfo.Errors, "panic") {
		t.Errorf("poison pill: %s (%s) crash_attempt %d errors %+v; want quarantined at the crash limit %d after panics",
			pinfo.State, pinfo.Reason, pinfo.CrashAttempt, pinfo.Errors, poisonCrashLimit)
	}
	pst, err := c.QueueStats(ctx, poisonQueue, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if pst.Depth[flow.StateQuarantined] != 1 {
		t.Errorf("poison queue: %v, want the one quarantined job", pst.Depth)
	}

	// Every effect exactly once, in the jobs' slot and relayed.
	checkLedger(t, rdb, part.Tag()+":u:ledger", len(ids))
	checkLedger(t, rdb, foreignLedger(ns), len(ids))
	if n, err := rdb.XLen(ctx, part.Outbox()+":dead").Result(); err != nil || n != 0 {
		t.Errorf("%d outbox entries could not be relayed (%v)", n, err)
	}

	stale := f.staleSteps.Load() + f.staleOutcomes.Load()
	again := reruns(t, rdb, ns, len(ids))
	summary := fmt.Sprintf("chaos %s + drain %s (seed %d): %d jobs, %d kills, %d stalls, %d worker restarts, "+
		"%d Redis restarts (%d after SIGKILL), %d proxy cuts (%d connections), %d rejected stale writes "+
		"(%d steps, %d outcomes), 1 quarantined; %d crashes charged to %d jobs, %d attempts spent, "+
		"%d step executions repeated, %d enqueue calls retried",
		chaosWall.Round(time.Millisecond), drainWall.Round(time.Millisecond), seed, len(ids), ctl.Kills, ctl.Stalls,
		ctl.Restarts, ctl.RedisRestarts, ctl.RedisKills, ctl.Cuts, ctl.CutConns, stale, f.staleSteps.Load(),
		f.staleOutcomes.Load(), crashes, crashed, attempts, again, retries)
	t.Log(summary)

	// The chaos happened: each fault at least once, and zombies tried to
	// write and were refused.
	if ctl.Kills == 0 || ctl.Stalls == 0 || ctl.Restarts == 0 || ctl.RedisRestarts == 0 || ctl.Cuts == 0 || stale == 0 || len(ids) == 0 {
		t.Errorf("not every fault happened: %s", summary)
	}
}

// chaosDuration is how long the faults go on: envDuration, else 20 s (8 s
// with -short).
func chaosDuration(t *testing.T) time.Duration {
	if s := os.Getenv(envDuration); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive Go duration such as 5m", envDuration, s)
		}
		return d
	}
	if testing.Short() {
		return 8 * time.Second
	}
	return 20 * time.Second
}

func hasClass(errs []flow.ErrorRecord, class string) bool {
	for _, e := range errs {
		if e.Class == class {
			return true
		}
	}
	return false
}
