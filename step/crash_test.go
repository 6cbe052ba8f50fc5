package step_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// TestKilledWorkersResumeExactlyOnce enqueues ledger jobs of five steps and
// runs them in worker processes that are SIGKILLed again and again at
// random points (during start-up, mid-step, right after a checkpoint), each
// holding up to two jobs; the jobs they held are reclaimed when their 1 s
// leases expire. A last worker runs everything to the end. Every job
// completes without spending an attempt, every step's effects (one in the
// job's slot, one relayed through the outbox) are applied exactly once
// although steps' work ran more than once, and the lost leases are counted
// as crashes.
func TestKilledWorkersResumeExactlyOnce(t *testing.T) {
	t.Parallel()
	const jobs, minKills = 60, 30
	ctx := context.Background()
	rdb := shared.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]flow.Item, jobs)
	for n := range items {
		items[n] = flow.Item{Args: ledgerJob{N: n}}
	}
	enq, err := c.EnqueueMany(ctx, items...)
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]keys.Ref, jobs)
	for n, e := range enq {
		var ok bool
		if refs[n], ok = keys.ParseRef(ns, e.ID); !ok || e.Err != nil {
			t.Fatalf("job %d: %+v", n, e)
		}
	}
	// checkpoints counts the step checkpoints of all jobs; states, the
	// completed jobs and the running ones per lease holder.
	checkpoints := func() int64 {
		cmds, _ := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, r := range refs {
				p.HLen(ctx, r.Steps(r.Local))
			}
			return nil
		})
		var total int64
		for _, cmd := range cmds {
			total += cmd.(*redis.IntCmd).Val()
		}
		return total
	}
	states := func() (done int, holders map[string]int) {
		cmds, _ := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, r := range refs {
				p.HMGet(ctx, r.Job(r.Local), keys.FieldState, keys.FieldLeaseID)
			}
			return nil
		})
		holders = map[string]int{}
		for _, cmd := range cmds {
			v := cmd.(*redis.SliceCmd).Val()
			s, _ := v[0].(string)
			s = store.StateName(s)
			lease, _ := v[1].(string)
			w, _, _ := store.LeaseHolder(lease) // the lease names its worker
			switch s {
			case flow.StateCompleted:
				done++
			case flow.StateRunning:
				holders[w]++
			}
		}
		return done, holders
	}

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	cfg := fastLeases("crash", ns, shared.Server.Addr())
	cfg.Concurrency, cfg.CrashLimit = 2, 1000
	kills, killedHolding, stranded := 0, 0, 0
	started := time.Now()
	for kills < minKills {
		if done, _ := states(); done == jobs {
			t.Fatalf("seed %d: every job completed after %d kills; the kills need work left to interrupt (more jobs, fewer steps per round)", seed, kills)
		}
		p := startProc(t, cfg)
		// Fault injection, not a wait: the kill lands at a random point of
		// the worker process's work (whose progress only Redis shows).
		if rng.IntN(3) == 0 {
			// anywhere in the first 200 ms: start-up, claim, mid-step, commit
			time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		} else {
			// just after its next 0-2 checkpoints (if they come within 3 s),
			// plus 0-40 ms
			base, want := checkpoints(), int64(rng.IntN(3))
			for end := time.Now().Add(3 * time.Second); checkpoints() < base+want && time.Now().Before(end); {
				time.Sleep(2 * time.Millisecond)
			}
			time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		}
		p.kill(t)
		kills++
		// Its jobs stay running under its name until their leases expire,
		// at least 700 ms after its last renewal.
		if _, holders := states(); holders[p.id] > 0 {
			killedHolding++
			stranded += holders[p.id]
		}
	}
	killPhase := time.Since(started)
	doneBefore, _ := states()
	cpBefore := checkpoints()

	final := cfg
	final.Concurrency = 50
	last := startProc(t, final)
	// Polled here and below: worker processes do the work, and their
	// signals do not reach the test.
	redistest.Within(t, procTimeout, "every job completed", func() (bool, string) {
		done, holders := states()
		return done == jobs, fmt.Sprintf("%d of %d completed, running: %v", done, jobs, holders)
	})
	outbox := refs[0].Outbox()
	wantForeign := map[string]string{}
	for n := range jobs {
		for i := 1; i <= ledgerSteps; i++ {
			wantForeign[ledgerField(n, i)] = strconv.FormatInt(ledgerAmount(n, i), 10)
		}
	}
	redistest.Within(t, procTimeout, "outbox relayed", func() (bool, string) {
		n, _ := rdb.XLen(ctx, outbox).Result()
		got, _ := rdb.HGetAll(ctx, foreignLedger(ns)).Result()
		return n == 0 && len(got) == len(wantForeign), fmt.Sprintf("outbox %d entries, foreign ledger %d fields", n, len(got))
	})
	last.stop(t)

	totalCrashes, crashedJobs := 0, 0
	wantLocal := map[string]map[string]string{}
	for n, e := range enq {
		info, err := c.Job(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if info.State != flow.StateCompleted || info.Attempt != 0 || info.CrashAttempt != info.Orphan.Count {
			t.Errorf("job %d: state %s attempt %d crash_attempt %d orphan %+v; want completed, no attempt spent, every crash a reclaimed lease",
				n, info.State, info.Attempt, info.CrashAttempt, info.Orphan)
		}
		totalCrashes += info.CrashAttempt
		if info.CrashAttempt > 0 {
			crashedJobs++
		}
		var names []string
		for _, s := range info.Steps {
			names = append(names, fmt.Sprintf("%s@%d", s.Name, s.Index))
		}
		if diff := cmp.Diff([]string{"s1@0", "s2@1", "s3@2", "s4@3", "s5@4"}, names); diff != "" {
			t.Errorf("job %d steps (-want +got):\n%s", n, diff)
		}
		// SlotKey names a key of the job's partition (its cluster slot).
		local := refs[n].Tag() + ":u:ledger"
		if wantLocal[local] == nil {
			wantLocal[local] = map[string]string{}
		}
		for i := 1; i <= ledgerSteps; i++ {
			wantLocal[local][ledgerField(n, i)] = strconv.FormatInt(ledgerAmount(n, i), 10)
		}
	}
	for key, want := range wantLocal {
		got, err := rdb.HGetAll(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ledger %s in the jobs' slot (-want +got):\n%s", key, diff)
		}
	}
	foreign, err := rdb.HGetAll(ctx, foreignLedger(ns)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantForeign, foreign); diff != "" {
		t.Errorf("relayed ledger (-want +got):\n%s", diff)
	}
	if n, _ := rdb.XLen(ctx, outbox+":dead").Result(); n != 0 {
		t.Errorf("%d outbox entries could not be relayed", n)
	}
	runs, err := rdb.HGetAll(ctx, stepRuns(ns)).Result()
	if err != nil {
		t.Fatal(err)
	}
	reruns := 0
	for f := range wantForeign {
		k, _ := strconv.Atoi(runs[f])
		if k < 1 {
			t.Errorf("step %s never ran", f)
		}
		reruns += k - 1
	}

	t.Logf("seed %d: %d kills in %s (%d while holding jobs, %d jobs stranded); before the last worker %d/%d jobs done, %d/%d checkpoints",
		seed, kills, killPhase.Round(time.Millisecond), killedHolding, stranded, doneBefore, jobs, cpBefore, jobs*ledgerSteps)
	t.Logf("%d jobs, %d crashes charged to %d of them, %d step executions repeated; every effect applied once",
		jobs, totalCrashes, crashedJobs, reruns)
	if killedHolding < minKills/2 || crashedJobs == 0 || reruns == 0 {
		t.Errorf("the kills did not interrupt enough work: %d kills held jobs, %d jobs crashed, %d steps re-ran", killedHolding, crashedJobs, reruns)
	}
}

// TestFanOutSurvivesKilledWorkers: a parent spawns 200 children and waits
// for all of them; the worker process running them is SIGKILLed twice while
// the children are being processed and the parent waits. A fresh worker
// finishes: the parent completes with all 200 results, each child counted
// once.
func TestFanOutSurvivesKilledWorkers(t *testing.T) {
	t.Parallel()
	const kids = 200
	ctx := context.Background()
	rdb := shared.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: fanRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Enqueue(ctx, fanParent{N: kids, Work: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	parent, _ := keys.ParseRef(ns, res.ID)
	finished := func() int64 { return rdb.HLen(ctx, parent.Kids(parent.Local)).Val() }

	cfg := fastLeases("fanout", ns, shared.Server.Addr())
	cfg.Concurrency = 8
	var kidIDs []string
	stranded := 0
	for _, at := range []int64{40, 120} {
		p := startProc(t, cfg)
		// Polled: a worker process runs the children.
		redistest.Within(t, procTimeout, fmt.Sprintf("%d children finished", at), func() (bool, string) {
			n := finished()
			return n >= at, fmt.Sprintf("%d finished", n)
		})
		p.kill(t)
		n := finished()
		info, err := c.Job(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		if n >= kids || info.State != flow.StateScheduled || info.WaitingFor != "spawn" || info.WaitingCount != kids-int(n) {
			t.Fatalf("killed at %d finished children, parent %s waiting for %q (%d); want the parent waiting for the rest", n, info.State, info.WaitingFor, info.WaitingCount)
		}
		if kidIDs == nil {
			if err := info.DecodeStep("spawn", &kidIDs); err != nil || len(kidIDs) != kids {
				t.Fatalf("spawn step: %d IDs, %v", len(kidIDs), err)
			}
		}
		for _, id := range kidIDs {
			ref, _ := keys.ParseRef(ns, id)
			h, _ := rdb.HMGet(ctx, ref.Job(ref.Local), keys.FieldState, keys.FieldLeaseID).Result()
			lease, _ := h[1].(string)
			w, _, _ := store.LeaseHolder(lease) // the lease names its worker
			if s, _ := h[0].(string); store.StateName(s) == flow.StateRunning && w == p.id {
				stranded++
			}
		}
		t.Logf("killed the worker with %d of %d children finished", n, kids)
	}
	last := startProc(t, cfg)
	info := waitCompleted(t, c, res.ID)
	last.stop(t)

	var got []int
	if err := info.DecodeResult(&got); err != nil {
		t.Fatal(err)
	}
	want := make([]int, kids)
	for i := range want {
		want[i] = i * i
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parent's results (-want +got):\n%s", diff)
	}
	if info.Attempt != 0 {
		t.Errorf("parent spent %d attempts", info.Attempt)
	}
	checkKidCounts(t, rdb, parent, kids)
	crashed := 0
	for _, id := range kidIDs {
		k, err := c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if k.State != flow.StateCompleted || k.Attempt != 0 || k.Parent != res.ID {
			t.Errorf("child %s: %s attempt %d parent %q", id, k.State, k.Attempt, k.Parent)
		}
		crashed += k.CrashAttempt
	}
	if crashed == 0 || crashed != stranded {
		t.Errorf("children charged %d crashes; the killed workers held %d", crashed, stranded)
	}
	t.Logf("2 kills, %d children reclaimed from dead workers; parent crash_attempt %d", crashed, info.CrashAttempt)
}

// TestFanOutRelayAfterWorkerDeath: on a 3-node cluster, a parent spawns
// 200 children in another queue split into 4 partitions, so every child's
// completion notifies the parent through its partition's outbox. The
// worker process running the children dies between the children's
// completion and the relay of their notifications; a fresh worker relays
// them and the parent completes with every result.
//
// A relay is kicked as soon as an ack writes to an outbox, so the window
// between the two is one round trip. "relay refused" makes it
// deterministic: the children's worker runs as a Redis ACL user that may
// only touch the children's partitions, so its relays of notifications
// (scripts on the parent's partition) fail with NOPERM; it is SIGKILLed once
// the outboxes hold all 200 notifications and none was delivered. "killed
// at the first outbox entry" is the timing race itself: the worker relays
// only when kicked, and is SIGKILLed as soon as an outbox has an entry,
// wherever it is then (claiming, acking, mid-relay). (While acks do not
// kick the relay for notifications, see TestChildNotificationKicksRelay,
// that worker never relays them at all.)
func TestFanOutRelayAfterWorkerDeath(t *testing.T) {
	t.Parallel()
	for _, refuse := range []bool{true, false} {
		name := "relay refused"
		if !refuse {
			name = "killed at the first outbox entry"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fanOutRelayAfterDeath(t, refuse)
		})
	}
}

func fanOutRelayAfterDeath(t *testing.T, refuse bool) {
	const kids = 200
	ctx := context.Background()
	cc := shared.Cluster.Client()
	t.Cleanup(func() { cc.Close() })
	ns := redistest.NewNamespace(t)
	parts := map[string]int{"kids": 4}
	var kidParts []keys.Partition
	for i := range parts["kids"] {
		kidParts = append(kidParts, keys.Partition{NS: ns, Queue: "kids", Index: i})
	}
	outboxed := func() (total int64) {
		for _, p := range kidParts {
			total += cc.XLen(ctx, p.Outbox()).Val()
		}
		return total
	}

	reg := fanRegistry()
	c, err := flow.NewClient(cc, flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: parts})
	if err != nil {
		t.Fatal(err)
	}
	// The parent's worker serves only the parent's queue: it never relays
	// the children's outboxes.
	w := testkit.StartWorker(t, cc, reg, runtime.Options{Namespace: ns, Partitions: parts, MaintenanceInterval: 200 * time.Millisecond, Backoff: noBackoff}, nil)
	res, err := c.Enqueue(ctx, fanParent{N: kids, Queue: "kids"})
	if err != nil {
		t.Fatal(err)
	}
	parent, _ := keys.ParseRef(ns, res.ID)
	var info *flow.JobInfo
	testkit.Until(t, &w.Sig.Settled, nil, "parent waiting for its children", func() (bool, string) {
		info, err = c.Job(ctx, res.ID)
		return err == nil && info.State == flow.StateScheduled && info.WaitingFor == "spawn", fmt.Sprintf("%+v %v", info, err)
	})

	kidsCfg := fastLeases("fanout", ns, shared.Cluster.Addrs()...)
	kidsCfg.Cluster, kidsCfg.Queues, kidsCfg.Partitions = true, map[string]int{"kids": 1}, parts
	firstCfg := kidsCfg
	if refuse {
		firstCfg.User, firstCfg.Password = kidsOnlyUser(t, ns)
	} else {
		firstCfg.Maintenance = time.Hour // relays only when its own acks kick it
	}
	first := startProc(t, firstCfg)
	// Polled here and below: worker processes run the children.
	if refuse {
		redistest.Within(t, procTimeout, "every child's notification in an outbox, and a relay refused", func() (bool, string) {
			n := outboxed()
			refused := strings.Contains(first.stderr.String(), "NOPERM")
			return n == kids && refused, fmt.Sprintf("%d outbox entries, relay refused: %v", n, refused)
		})
	} else {
		redistest.Within(t, procTimeout, "a notification in an outbox", func() (bool, string) {
			n := outboxed()
			return n > 0, fmt.Sprintf("%d outbox entries", n)
		})
	}
	first.kill(t)
	left, delivered := outboxed(), cc.HLen(ctx, parent.Kids(parent.Local)).Val()
	if refuse {
		if left != kids || delivered != 0 {
			t.Fatalf("the worker died with %d notifications outboxed and %d delivered; want %d and none", left, delivered, kids)
		}
	}
	if info, err = c.Job(ctx, res.ID); err != nil || info.State != flow.StateScheduled || info.WaitingCount != kids-int(delivered) {
		t.Fatalf("parent after the worker died: %+v, %v; want waiting for %d children", info, err, kids-int(delivered))
	}
	t.Logf("the worker died with %d notifications in outboxes, %d delivered", left, delivered)

	fresh := startProc(t, kidsCfg)
	info = waitCompleted(t, c, res.ID)
	redistest.Within(t, procTimeout, "outboxes empty", func() (bool, string) {
		n := outboxed()
		return n == 0, fmt.Sprintf("%d entries", n)
	})
	fresh.stop(t)

	var got []int
	if err := info.DecodeResult(&got); err != nil {
		t.Fatal(err)
	}
	want := make([]int, kids)
	for i := range want {
		want[i] = i * i
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parent's results (-want +got):\n%s", diff)
	}
	if info.Attempt != 0 || info.CrashAttempt != 0 {
		t.Errorf("parent: attempt %d crash_attempt %d", info.Attempt, info.CrashAttempt)
	}
	checkKidCounts(t, cc, parent, kids)
	for _, p := range kidParts {
		if n := cc.XLen(ctx, p.Outbox()+":dead").Val(); n != 0 {
			t.Errorf("partition %d: %d notifications could not be relayed", p.Index, n)
		}
	}
}

// TestChildNotificationKicksRelay: a child's completion that notifies its
// parent through the outbox (the parent lives in another partition) must
// get relayed at once, like an outboxed effect, not on the next
// maintenance tick: fan-in is meant to take milliseconds. The worker's
// maintenance (and with it the periodic relay) is pushed out of reach, so
// only the kick after the children's acks can wake the parent.
func TestChildNotificationKicksRelay(t *testing.T) {
	t.Parallel()
	const kids = 20
	ctx := context.Background()
	cc := shared.Cluster.Client()
	t.Cleanup(func() { cc.Close() })
	ns := redistest.NewNamespace(t)
	parts := map[string]int{"kids": 4}
	reg := fanRegistry()
	c, err := flow.NewClient(cc, flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: parts})
	if err != nil {
		t.Fatal(err)
	}
	w := testkit.StartWorker(t, cc, reg, runtime.Options{
		Namespace: ns, Queues: map[string]int{"default": 1, "kids": 1}, Partitions: parts,
		MaintenanceInterval: time.Hour, Backoff: noBackoff,
	}, nil)
	res, err := c.Enqueue(ctx, fanParent{N: kids, Queue: "kids"})
	if err != nil {
		t.Fatal(err)
	}
	// Only a relay pass can wake the parent, and the periodic one is an
	// hour away: a relay not kicked by the children's acks never comes.
	if info, err := testkit.AwaitState(c, w.Sig, res.ID, flow.StateCompleted, testkit.Timeout); err != nil {
		var left int64
		for i := range parts["kids"] {
			left += cc.XLen(ctx, keys.Partition{NS: ns, Queue: "kids", Index: i}.Outbox()).Val()
		}
		waiting := -1
		if info != nil {
			waiting = info.WaitingCount
		}
		t.Fatalf("%v\n%d children enqueued, parent waiting for %d; %d notifications sit in the "+
			"children's outboxes: the acks that wrote them did not kick the relay (lua/ack.lua counts only "+
			"effects in its outbox total, not lib_lifecycle.lua notify_parent's entries)", err, kids, waiting, left)
	}
}

// kidsOnlyUser creates, on every cluster node, a Redis user that may run
// any command on the keys of ns's "kids" queue only (and the queue
// registry, which every worker reads at start, and the retention record
// it writes then), and returns its name and password.
func kidsOnlyUser(t *testing.T, ns string) (user, password string) {
	t.Helper()
	ctx := context.Background()
	user, password = "kids-"+ns, "pw-"+ns
	for _, n := range shared.Cluster.Nodes() {
		rdb := n.Client()
		err := rdb.Do(ctx, "ACL", "SETUSER", user, "reset", "on", ">"+password,
			"~{"+ns+":kids:*", "~"+keys.Queues(ns), "~"+keys.Retention(ns), "~"+keys.Namespaces, "allchannels", "+@all").Err()
		if err != nil {
			rdb.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() {
			defer rdb.Close()
			if err := rdb.Do(ctx, "ACL", "DELUSER", user).Err(); err != nil {
				t.Errorf("ACL DELUSER on %s: %v", n.Addr(), err)
			}
		})
	}
	return user, password
}

// waitCompleted polls a job until it is completed, for a job that worker
// processes work: their signals do not reach the test.
func waitCompleted(t *testing.T, c *flow.Client, id string) *flow.JobInfo {
	t.Helper()
	var info *flow.JobInfo
	redistest.Within(t, procTimeout, "job "+id+" completed", func() (bool, string) {
		var err error
		info, err = c.Job(context.Background(), id)
		if err != nil {
			return false, err.Error()
		}
		return info.State == flow.StateCompleted, fmt.Sprintf("state %s waiting for %q (%d)", info.State, info.WaitingFor, info.WaitingCount)
	})
	return info
}

// checkKidCounts: the parent recorded each child once, none failed.
func checkKidCounts(t *testing.T, rdb redis.UniversalClient, parent keys.Ref, kids int) {
	t.Helper()
	ctx := context.Background()
	if n := rdb.HLen(ctx, parent.Kids(parent.Local)).Val(); n != int64(kids) {
		t.Errorf("parent recorded %d children, want %d", n, kids)
	}
	counts, err := rdb.HGetAll(ctx, parent.KidCount(parent.Local)).Result()
	if err != nil {
		t.Fatal(err)
	}
	// a join's marks of the children it waited for ('w:<child>',
	// lua/lib_lifecycle.lua deliver) are not counters
	maps.DeleteFunc(counts, func(k, _ string) bool { return strings.HasPrefix(k, "w:") })
	if diff := cmp.Diff(map[string]string{"spawn": strconv.Itoa(kids)}, counts); diff != "" {
		t.Errorf("parent's child counters (-want +got):\n%s", diff)
	}
}
