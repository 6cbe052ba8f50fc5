package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
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

// exitPillStagger is the delay between the exit pills' first runs.
const exitPillStagger = 1500 * time.Millisecond

// drainTimeout bounds the final worker's drain after the chaos.
const drainTimeout = 3 * time.Minute

// envSeed, when set, is the seed of a run (a uint64) instead of the time:
// the controller's draws and the proxy's random faults (SetRandom) repeat.
const envSeed = "SLUICE_CHAOS_SEED"

// The proxy's random faults on script calls (EVALSHA, EVAL): the chance
// that Redis runs one and its reply is lost (go-redis sends it again), and
// that Redis receives one twice.
const (
	dropRate = 0.02
	dupRate  = 0.02
)

// TestChaos runs ledger jobs (four durable steps, each committing fenced
// effects, and a completion effect) on worker processes that reach Redis
// through a TCP proxy, while a producer keeps enqueueing and a controller
// SIGKILLs workers, SIGSTOPs them past their lease and resumes them,
// restarts them gracefully, restarts Redis (append-only, fsync always;
// half the time after a SIGKILL), cuts every proxied connection and silences
// every one (cut three leases later; Proxy.Silence); the
// proxy also loses the reply to, or delivers twice, a few of the script
// calls (dropRate, dupRate); every other worker process re-sends nothing
// at go-redis's level (workerConfig.NoRetries), so that a lost reply
// reaches what Sluice sends again itself. Among the ledger jobs run
// bad-effect jobs,
// whose commits hold an effect that cannot apply; beside them, in the
// same worker processes, run the culprits: a poison pill that panics in
// every attempt and exit pills that end their process with os.Exit (the
// fleet restarts it). Then a last healthy worker drains the queues, the
// random proxy faults still on. Every acknowledged ledger job must be
// completed with all its checkpoints, every effect applied exactly once (a
// zombie's accepted write, or a script run twice, would apply one twice),
// every bad-effect job archived with none of its effects applied, every
// job hash in exactly the index its state names, the stats counters equal
// to the real counts, the culprits alone quarantined, and each fault
// injected at least once, including stale writes refused. Durable waits
// run among the ledger jobs (workflows_test.go): approval workflows that
// wait for a signal, which a signaller sends them through the proxy while
// the faults go on (signaller_test.go), and nap jobs that sleep; each
// workflow must take exactly one signal of its own, none acknowledged may
// be lost, and no wait may end before its time (checkWorkflows, checkNaps).
// A trickle of ledger jobs on a queue of its own (trickle_test.go), each
// enqueued alone through the proxy, is pushed to idle workers by its
// enqueue: those jobs too must complete with every effect once, and the
// pushes Redis published must have been started or handed back, but for
// the few lost with a faulted worker (checkPushes). Boxed jobs
// (boxed_test.go), ledger jobs of their own whose attempts run in isolated
// children of the worker processes (runtime/isolated), go among the
// ledger jobs: each must complete with its four checkpoints and every
// effect once, the worker committing its child's checkpoints under its
// lease; and no child may outlive the workers (checkNoChildren): one
// whose worker died ends with its stdin, one whose worker is stopped ends
// when the lease it heard of runs out.
func TestChaos(t *testing.T) {
	t.Parallel()
	dur := chaosDuration(t)
	ctx := context.Background()
	srv, proxy, seed := startProxied(t, redisproc.WithAppendOnly())
	proxy.SetRandom(dropRate, dupRate, seed, Commands(lua.Commands...))
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
	culprits := map[string]bool{poison.ID: true}
	var exits []string
	for i := range exitPills(dur) {
		// staggered, so that they seldom take two processes down at once
		r, err := c.Enqueue(ctx, exitPill{}, flow.WithQueue(poisonQueue), flow.WithID(exitPillID(i)), flow.WithDelay(time.Duration(i)*exitPillStagger))
		if err != nil {
			t.Fatal(err)
		}
		exits = append(exits, r.ID)
		culprits[r.ID] = true
	}
	part := keys.Partition{NS: ns, Queue: "default"}
	ppart := keys.Partition{NS: ns, Queue: poisonQueue}
	// The list in the jobs' slot that the bad-effect jobs' INCRBYs hit.
	if err := rdb.RPush(ctx, part.Tag()+":u:"+badList, "not a counter").Err(); err != nil {
		t.Fatal(err)
	}

	cfg := workerConfig{
		Addr: proxy.Addr(), NS: ns, Concurrency: 4, Lease: lease, Renew: lease / 4, Maintenance: 200 * time.Millisecond,
		NoRetries: true, BoxDir: t.TempDir(),
	}
	f := newFleet(t, cfg)
	for range fleetSize {
		f.start(cfg)
	}
	// The signaller's calls go through the proxy, into the faults.
	prdb := redis.NewClient(&redis.Options{Addr: proxy.Addr(), DialTimeout: time.Second})
	t.Cleanup(func() { prdb.Close() })
	bare := redis.NewClient(&redis.Options{Addr: proxy.Addr(), DialTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { bare.Close() })
	sc, err := flow.NewClient(prdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	bsc, err := flow.NewClient(bare, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stopSignals := context.WithCancel(ctx)
	sg := newSignaller(sctx, sc, bsc, proxy, rdb, ns)
	t.Cleanup(func() {
		stopSignals()
		sg.wait()
	})
	prod := &producer{c: c, backlog: backlog, onWorkflow: sg.add}
	pctx, stopProducer := context.WithCancel(ctx)
	produced := make(chan struct{})
	// The trickle goes through the proxy, into the faults, as the
	// signaller's calls do.
	pushes := watchPushes(ctx, t, rdb, ns)
	trick := &trickler{c: sc, rng: rand.New(rand.NewPCG(seed, 1)), ready: func(ctx context.Context) (int64, error) {
		return rdb.LLen(ctx, keys.Partition{NS: ns, Queue: trickleQueue}.Available(0)).Result()
	}}
	go func() {
		defer close(produced)
		var wg sync.WaitGroup
		wg.Go(func() { trick.run(pctx) })
		prod.run(pctx)
		wg.Wait()
	}()
	t.Cleanup(func() {
		stopProducer()
		<-produced
	})

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
	// finishes everything (restarted if an exit pill ends it).
	for len(f.live) > 0 {
		f.term(f.live[0])
	}
	final := cfg
	final.Concurrency, final.NoRetries = 16, false
	f.start(final)
	ids, retries, errs := prod.result()
	bad := prod.badJobs()
	wf, naps := prod.workflows()
	boxed := prod.boxedJobs()
	trickled, terrs := trick.result()
	others := len(bad) + len(wf) + len(naps) + len(boxed)
	for _, err := range append(errs, terrs...) {
		t.Errorf("enqueue: %v", err)
	}
	tpart := keys.Partition{NS: ns, Queue: trickleQueue}
	redistest.Within(t, drainTimeout, "every job finished and every effect relayed", func() (bool, string) {
		f.restartExited(final)
		st, err := admin.New(c).QueueStats(ctx, "default", time.Minute)
		if err != nil {
			return false, err.Error()
		}
		pst, err := admin.New(c).QueueStats(ctx, poisonQueue, time.Minute)
		if err != nil {
			return false, err.Error()
		}
		tst, err := admin.New(c).QueueStats(ctx, trickleQueue, time.Minute)
		if err != nil {
			return false, err.Error()
		}
		outbox, err := rdb.XLen(ctx, part.Outbox()).Result()
		if err != nil {
			return false, err.Error()
		}
		toutbox, err := rdb.XLen(ctx, tpart.Outbox()).Result()
		if err != nil {
			return false, err.Error()
		}
		done := st.Depth[flow.StateCompleted] + st.Depth[flow.StateArchived] + st.Depth[flow.StateQuarantined]
		pdone := pst.Depth[flow.StateArchived] + pst.Depth[flow.StateQuarantined]
		tdone := tst.Depth[flow.StateCompleted] + tst.Depth[flow.StateArchived] + tst.Depth[flow.StateQuarantined]
		return done >= int64(len(ids)+others) && pdone >= int64(len(culprits)) && tdone >= int64(len(trickled)) &&
				outbox+toutbox == 0 && sg.idle(),
			fmt.Sprintf("%d of %d jobs finished (%v), %d of %d culprits (%v), %d of %d trickled (%v), %d outbox entries, %d workflows' signals unsettled",
				done, len(ids)+others, st.Depth, pdone, len(culprits), pst.Depth, tdone, len(trickled), tst.Depth, outbox+toutbox, sg.busy.Load())
	})
	sg.wait()
	sends, sgErrs := sg.result()
	for _, e := range sgErrs {
		t.Errorf("signaller: %s", e)
	}
	for len(f.live) > 0 {
		f.term(f.live[0])
	}
	drainWall := time.Since(started) - chaosWall
	// No isolated child outlives its worker.
	checkNoChildren(t, cfg.BoxDir)
	dropped, duplicated := proxy.Fired()
	pushed, pushedJobs, badPushes := pushes.stop()
	for _, err := range badPushes {
		t.Errorf("a push did not decode: %v", err)
	}
	pStarted, pBack, pLost, pUnseen := checkPushes(t, pushedJobs, &f.pushes)

	// The checks read Redis directly, not through the proxy.
	direct := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { direct.Close() })
	if c, err = flow.NewClient(direct, flow.ClientOptions{Namespace: ns}); err != nil {
		t.Fatal(err)
	}

	// Every job: completed with its four checkpoints, none lost.
	var lst, tst ledgerStats
	for n, id := range ids {
		checkLedgerJob(ctx, t, c, n, id, &lst)
	}
	if wrong, err := direct.SMembers(ctx, badPayloads(ns)).Result(); err != nil || len(wrong) > 0 {
		t.Errorf("attempts saw wrong padding in jobs %v (%v)", wrong, err)
	}
	// The bad-effect jobs: archived, none of their effects applied.
	badClasses := checkBadEffects(ctx, t, c, direct, part, bad)
	// The boxed jobs: completed with their four checkpoints.
	bst := checkBoxed(ctx, t, c, boxed, cfg.BoxDir)

	// Nothing else finished, nothing else exists: the ledger jobs
	// completed, the bad-effect jobs archived.
	st, err := admin.New(c).QueueStats(ctx, "default", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	wantDepth := map[string]int64{}
	for s := range st.Depth {
		wantDepth[s] = 0
	}
	wantDepth[flow.StateCompleted] = int64(len(ids) + len(wf) + len(naps) + len(boxed))
	wantDepth[flow.StateArchived] = int64(len(bad))
	if diff := cmp.Diff(wantDepth, st.Depth); diff != "" {
		t.Errorf("ordinary jobs per state (-want +got):\n%s", diff)
	}

	// The culprits: quarantined at the crash limit, the poison pill after
	// panics, the exit pills after losing their leases with their process.
	pinfo, err := c.Job(ctx, poison.ID)
	if err != nil {
		t.Fatal(err)
	}
	if pinfo.State != flow.StateQuarantined || pinfo.Reason != "crash_limit" || pinfo.CrashAttempt != poisonCrashLimit || !hasClass(pinfo.Errors, "panic") {
		t.Errorf("poison pill: %s (%s) crash_attempt %d errors %+v; want quarantined at the crash limit %d after panics",
			pinfo.State, pinfo.Reason, pinfo.CrashAttempt, pinfo.Errors, poisonCrashLimit)
	}
	for _, id := range exits {
		info, err := c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.State != flow.StateQuarantined || info.Reason != "crash_limit" || info.CrashAttempt != poisonCrashLimit || !hasClass(info.Errors, "lease_expired") {
			t.Errorf("exit pill %s: %s (%s) crash_attempt %d errors %+v; want quarantined at the crash limit %d after lost leases",
				id, info.State, info.Reason, info.CrashAttempt, info.Errors, poisonCrashLimit)
		}
	}
	pst, err := admin.New(c).QueueStats(ctx, poisonQueue, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if pst.Depth[flow.StateQuarantined] != int64(len(culprits)) {
		t.Errorf("poison queue: %v, want the %d culprits quarantined", pst.Depth, len(culprits))
	}

	// The workflows: each took exactly one signal of its own, none was
	// lost; each nap woke no earlier than its wake time.
	fields := expectedFields(len(ids))
	tfields := checkTrickled(ctx, t, c, trickled, &tst)
	maps.Copy(fields, tfields)
	wfFields, wst := checkWorkflows(ctx, t, c, wf, sends)
	maps.Copy(fields, wfFields)
	maps.Copy(fields, checkNaps(ctx, t, c, naps, &wst))
	maps.Copy(fields, boxedFields(boxed))

	// Every effect exactly once, in the jobs' slot and relayed: the ledger
	// jobs', the workflows' (one receipt each), the nap jobs' and the boxed
	// jobs'.
	for f := range tfields {
		delete(fields, f)
	}
	checkLedger(t, direct, part.Tag()+":u:ledger", fields)
	checkLedger(t, direct, tpart.Tag()+":u:ledger", tfields)
	maps.Copy(fields, tfields)
	checkLedger(t, direct, foreignLedger(ns), fields)
	for _, p := range []keys.Partition{part, tpart} {
		if n, err := direct.XLen(ctx, p.Outbox()+":dead").Result(); err != nil || n != 0 {
			t.Errorf("%d outbox entries of %s could not be relayed (%v)", n, p.Tag(), err)
		}
	}

	// Every job hash in exactly the index its state names, the counters
	// equal to the real counts, and only culprits quarantined.
	hashes, quarantined := 0, 0
	parts := partitionsOf(ctx, t, direct, ns, part, ppart, tpart)
	for _, p := range parts {
		ps, err := checkPartition(ctx, direct, p)
		if err != nil {
			t.Fatal(err)
		}
		ps.report(t, p)
		hashes += ps.Jobs
		for _, id := range ps.Quarantined {
			quarantined++
			if !culprits[id] {
				t.Errorf("job %s quarantined: not a culprit", id)
			}
		}
	}
	if want := len(ids) + others + len(culprits) + len(trickled); hashes != want {
		t.Errorf("%d job hashes in the namespace, want %d (%d ledger, %d bad-effect, %d workflows, %d nap jobs, %d boxed, %d culprits, %d trickled)",
			hashes, want, len(ids), len(bad), len(wf), len(naps), len(boxed), len(culprits), len(trickled))
	}

	stale := f.staleSteps.Load() + f.staleOutcomes.Load()
	ss := sg.stats()
	again := reruns(t, direct, ns, len(ids))
	summary := fmt.Sprintf("chaos %s + drain %s (seed %d): %d jobs + %d bad-effect jobs (errors by class %v), "+
		"%d kills, %d stalls, %d worker restarts, %d Redis restarts (%d after SIGKILL), %d proxy cuts (%d connections), %d silences (%d connections), "+
		"script calls faulted at %g%% drop, %g%% duplicate (seed %d): %d replies dropped, %d requests duplicated; "+
		"%d worker processes ended by exit pills (%d exit pill runs), %d rejected stale writes (%d steps, %d outcomes), "+
		"%d quarantined (%d culprits); %d job hashes in %d partitions checked against indexes and counters; "+
		"%d crashes charged to %d ledger jobs (at most %d to one), %d attempts spent, %d step executions repeated, "+
		"%d enqueue calls retried; %d jobs trickled, %d pushes published (%d jobs: %d started, %d handed back, %d lost; "+
		"%d started unseen by the watch), %d crashes charged to %d trickled jobs (at most %d to one); %s; %d boxed jobs: %s",
		chaosWall.Round(time.Millisecond), drainWall.Round(time.Millisecond), seed, len(ids), len(bad), badClasses,
		ctl.Kills, ctl.Stalls, ctl.Restarts, ctl.RedisRestarts, ctl.RedisKills, ctl.Cuts, ctl.CutConns, ctl.Silences, ctl.SilencedConns,
		dropRate*100, dupRate*100, seed, dropped, duplicated,
		f.exited, f.pillExits.Load(), stale, f.staleSteps.Load(), f.staleOutcomes.Load(),
		quarantined, len(culprits), hashes, len(parts),
		lst.Crashes, lst.Crashed, lst.MaxCrash, lst.Attempts, again, retries,
		len(trickled), pushed, len(pushedJobs), pStarted, pBack, pLost, pUnseen, tst.Crashes, tst.Crashed, tst.MaxCrash, wst.summary(sg, len(naps)), len(boxed), bst)
	t.Log(summary)

	// The chaos happened: each fault at least once, and zombies tried to
	// write and were refused.
	if ctl.Kills == 0 || ctl.Stalls == 0 || ctl.Restarts == 0 || ctl.RedisRestarts == 0 || ctl.Cuts == 0 || ctl.Silences == 0 || stale == 0 ||
		dropped == 0 || duplicated == 0 || f.exited == 0 || len(ids) == 0 || len(bad) < badModes || pushed == 0 ||
		wst.Plain == 0 || wst.Remind == 0 || wst.Silent == 0 || wst.Naps == 0 ||
		ss.Early == 0 || ss.Observed == 0 || ss.Probes == 0 || len(boxed) == 0 || bst.Ends["replied"] == 0 {
		t.Errorf("not every fault happened: %s", summary)
	}
}

// startProxied starts a redis-server of the suite's own (with opts) and a
// proxy in front of it, closed when t ends, and draws the run's seed
// (chaosSeed), logged. A run pointed at an external server is skipped:
// the suite restarts, or faults, its own.
func startProxied(t *testing.T, opts ...redisproc.Option) (*redisproc.Server, *Proxy, uint64) {
	t.Helper()
	if os.Getenv(redisproc.EnvExternalAddr) != "" {
		t.Skipf("the chaos suite starts its own redis-server; %s points at an external one", redisproc.EnvExternalAddr)
	}
	srv, err := redisproc.StartServer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	proxy, err := NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	seed := chaosSeed(t)
	t.Logf("seed %d (%s=%d draws the same faults)", seed, envSeed, seed)
	return srv, proxy, seed
}

// chaosSeed is the run's seed: envSeed, else the time.
func chaosSeed(t *testing.T) uint64 {
	if s := os.Getenv(envSeed); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want a uint64", envSeed, s)
		}
		return seed
	}
	return uint64(time.Now().UnixNano())
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

func hasClass(errs []sluicetype.ErrorRecord, class string) bool {
	for _, e := range errs {
		if e.Class == class {
			return true
		}
	}
	return false
}
