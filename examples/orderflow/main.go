// Command orderflow runs an order workflow, authorize → reserve → charge →
// ship → notify, as durable steps, and checks that neither a retry nor a
// crash between steps repeats a finished step or charges an order twice.
//
// With no flags it runs a few orders on an embedded Redis (miniredis).
// With -crash-after STEP (REDIS_URL required) the process dies abruptly
// right after order 1 commits STEP; -resume then finishes the run from its
// checkpoints. README.md has the walkthrough.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/examples/internal/exampleredis"
	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

// Order is the job. Run prefixes the keys of this run's shop data.
type Order struct {
	N     int
	Cents int64
	Run   string
}

// Kind names the job type.
func (Order) Kind() string { return "order" }

// Receipt is the payment provider's answer, checkpointed by the charge step.
type Receipt struct {
	ID    string
	Cents int64
}

// Result is a completed order's stored result. It carries the ledger key
// because idempotency.SlotKey can only be computed inside a handler.
type Result struct {
	LedgerKey string
}

var steps = []string{"authorize", "reserve", "charge", "ship", "notify"}

// lastRun records the crashing run for -resume to find.
const lastRun = "orderflow:last-run"

func main() {
	n := flag.Int("orders", 5, "number of orders")
	crashAfter := flag.String("crash-after", "", "exit abruptly right after order 1 commits this step (needs REDIS_URL)")
	resume := flag.Bool("resume", false, "finish the run that -crash-after left behind (needs REDIS_URL)")
	flag.Parse()
	usage := ""
	switch {
	case *n < 1:
		usage = "-orders must be at least 1"
	case (*crashAfter != "" || *resume) && os.Getenv("REDIS_URL") == "":
		usage = "-crash-after and -resume need a Redis that outlives this process: set REDIS_URL (see README.md)"
	case *crashAfter != "" && !slices.Contains(steps, *crashAfter):
		usage = fmt.Sprintf("-crash-after must be one of %v", steps)
	}
	if usage != "" {
		fmt.Fprintln(os.Stderr, "orderflow:", usage)
		os.Exit(2)
	}
	if err := run(*n, *crashAfter, *resume); err != nil {
		fmt.Fprintln(os.Stderr, "orderflow:", err)
		os.Exit(1)
	}
}

func run(n int, crashAfter string, resume bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rdb, where, err := exampleredis.Connect()
	if err != nil {
		return err
	}
	defer rdb.Close()
	fmt.Println("redis:", where)

	// Each run has its own namespace; -resume takes the recorded one.
	ns := fmt.Sprintf("orderflow-%d", time.Now().UnixNano())
	if resume {
		rec := rdb.HGetAll(ctx, lastRun).Val()
		if rec["ns"] == "" {
			return fmt.Errorf("no run recorded at %s: run -crash-after first", lastRun)
		}
		ns, n = rec["ns"], int(atoi(rec["orders"]))
		fmt.Printf("resuming run %s (%d orders)\n", ns, n)
	} else if crashAfter != "" {
		if err := rdb.HSet(ctx, lastRun, "ns", ns, "orders", n).Err(); err != nil {
			return err
		}
	}

	s := &shop{rdb: rdb, provider: "shop:" + ns + ":provider", crashAfter: crashAfter}
	reg := flow.NewRegistry()
	if err := flow.RegisterResult(reg, s.handle); err != nil {
		return err
	}
	client, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	if err != nil {
		return err
	}
	// Enqueueing with fixed IDs is idempotent, so -resume enqueues the same
	// orders again to learn their IDs: the existing jobs are kept.
	orders := make([]Order, n)
	ids := make([]string, n)
	for i := range orders {
		orders[i] = Order{N: i + 1, Cents: 1999 + 1000*int64(i), Run: "shop:" + ns}
		res, err := client.Enqueue(ctx, orders[i], flow.WithID(fmt.Sprintf("order-%d", i+1)))
		if err != nil {
			return err
		}
		ids[i] = res.ID
		if !res.Duplicate {
			fmt.Printf("enqueued %s (%d cents)\n", res.ID, orders[i].Cents)
		}
	}

	worker, err := runtime.NewWorker(rdb, reg, runtime.Options{
		Namespace: ns,
		Lease:     2 * time.Second, // a dead worker's job is reclaimed ~2s after the crash
		Backoff:   func(int) time.Duration { return 300 * time.Millisecond },
		// One order at a time keeps the output readable and the crash on order 1.
		Concurrency: 1,
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	stopped := make(chan error, 1)
	go func() { stopped <- worker.Run(runCtx) }()

	infos, err := waitCompleted(ctx, client, ids)
	if err != nil {
		return err
	}
	entries := "shop:" + ns + ":ledger-entries"
	for ctx.Err() == nil && rdb.XLen(ctx, entries).Val() < int64(n) {
		time.Sleep(10 * time.Millisecond) // the outbox relay runs just after the commit
	}
	stop()
	if err := <-stopped; err != nil {
		return err
	}
	return report(ctx, rdb, s.provider, orders, infos, entries)
}

// shop holds the handler's dependencies.
type shop struct {
	rdb        redis.UniversalClient
	provider   string // the payment provider's records: idempotency key -> cents
	crashAfter string
}

// handle is the workflow. Each step runs at most once successfully per
// order: on a later attempt a finished step returns its checkpoint.
func (s *shop) handle(ctx context.Context, job *flow.Job[Order]) (Result, error) {
	o := job.Args
	fmt.Printf("order-%d: attempt (errors %d, crash_attempt %d)%s\n", o.N, job.Attempt, job.CrashAttempt, orphan(job.Orphan))
	auth, err := runStep(ctx, s, job, "authorize", func(ctx context.Context) (string, error) {
		return "auth-" + short(idempotency.Key(ctx, "authorize")), nil
	})
	if err != nil {
		return Result{}, err
	}
	if _, err := runStep(ctx, s, job, "reserve", func(ctx context.Context) (string, error) {
		return "rsv-" + short(auth), nil
	}); err != nil {
		return Result{}, err
	}
	ledger := idempotency.SlotKey(ctx, "ledger") // in the job's slot
	receipt, err := runStep(ctx, s, job, "charge", func(ctx context.Context) (Receipt, error) {
		// The key is the same in every attempt: the provider charges once.
		r, err := s.charge(ctx, idempotency.Key(ctx, "charge"), o.Cents)
		if err == nil && o.N == 3 && job.Attempt == 0 { // charged, but the answer is lost
			err = errors.New("connection reset before the provider's response arrived")
		}
		if err != nil {
			return Receipt{}, err
		}
		// The ledger commits with the receipt's checkpoint, fenced, all or
		// nothing: the hash in the job's slot in the same script, the
		// entries stream (a plain key) through the outbox, exactly once.
		return r, step.Effect(ctx,
			idempotency.HIncrBy(ledger, "cents", o.Cents),
			idempotency.HIncrBy(ledger, "orders", 1),
			idempotency.XAdd(o.Run+":ledger-entries", "order", strconv.Itoa(o.N), "receipt", r.ID))
	})
	if err != nil {
		return Result{}, err
	}
	tracking, err := runStep(ctx, s, job, "ship", func(ctx context.Context) (string, error) {
		return "trk-" + short(receipt.ID), nil
	})
	if err != nil {
		return Result{}, err
	}
	if _, err := runStep(ctx, s, job, "notify", func(ctx context.Context) (string, error) {
		return "mailed " + tracking, nil
	}); err != nil {
		return Result{}, err
	}
	return Result{LedgerKey: ledger}, nil
}

// runStep runs fn as the durable step name and prints whether it ran or
// was skipped, its result restored from an earlier attempt's checkpoint.
// With -crash-after the process dies right after order 1 commits name.
func runStep[T any](ctx context.Context, s *shop, job *flow.Job[Order], name string, fn func(context.Context) (T, error)) (T, error) {
	ran := false
	v, err := step.Run(ctx, name, func(ctx context.Context) (T, error) {
		ran = true
		return fn(ctx)
	})
	switch {
	case err != nil:
		fmt.Printf("  order-%d %-9s failed: %v\n", job.Args.N, name, err)
		return v, err
	case ran:
		fmt.Printf("  order-%d %-9s ran      -> %v\n", job.Args.N, name, v)
	default:
		fmt.Printf("  order-%d %-9s skipped  (checkpointed: %v)\n", job.Args.N, name, v)
	}
	if name == s.crashAfter && job.Args.N == 1 {
		fmt.Printf("*** crash: exiting right after order-1 committed %q; now run -resume\n", name)
		os.Exit(3) // abrupt: no ack, no lease release, no deferred cleanup
	}
	return v, nil
}

// charge simulates an external payment API that deduplicates requests by
// idempotency key: it charges once per key, and a repeated request gets the
// original receipt back. Its records are in Redis so that, like a real
// provider's, they outlive this process.
func (s *shop) charge(ctx context.Context, key string, cents int64) (Receipt, error) {
	fresh, err := s.rdb.HSetNX(ctx, s.provider, key, cents).Result()
	r := Receipt{ID: "rcpt-" + short(key), Cents: cents}
	if err == nil && !fresh {
		fmt.Printf("    provider: duplicate request (key %s), returning the original %s\n", key, r.ID)
	}
	return r, err
}

// report prints where each order ended, then checks the ledger against
// the orders and against the provider's own records.
func report(ctx context.Context, rdb redis.UniversalClient, provider string, orders []Order, infos []*flow.JobInfo, entries string) error {
	fmt.Println("orders:")
	var want, paid int64
	for i, info := range infos {
		var r Receipt
		if err := info.DecodeStep("charge", &r); err != nil {
			return err
		}
		want += orders[i].Cents
		fmt.Printf("  %-17s %s errors=%d crash_attempt=%d steps=%d receipt=%s%s\n", info.ID, info.State,
			info.Attempt, info.CrashAttempt, len(info.Steps), r.ID, orphan(info.Orphan))
	}
	// One queue partition, so all orders share one ledger hash.
	var res Result
	if err := infos[0].DecodeResult(&res); err != nil {
		return err
	}
	cents, booked := atoi(rdb.HGet(ctx, res.LedgerKey, "cents").Val()), atoi(rdb.HGet(ctx, res.LedgerKey, "orders").Val())
	charges := rdb.HVals(ctx, provider).Val()
	for _, v := range charges {
		paid += atoi(v)
	}
	xs := rdb.XRange(ctx, entries, "-", "+").Val()
	distinct := map[any]bool{}
	for _, e := range xs {
		distinct[e.Values["order"]] = true
	}
	n := len(orders)
	fmt.Printf("ledger %s (job's slot): %d orders, %d cents\n", res.LedgerKey, booked, cents)
	fmt.Printf("ledger entries %s (via outbox): %d entries, %d distinct orders\n", entries, len(xs), len(distinct))
	fmt.Printf("payment provider: %d charges, %d cents\n", len(charges), paid)
	if booked != int64(n) || cents != want || len(charges) != n || paid != want || len(xs) != n || len(distinct) != n {
		return fmt.Errorf("the ledger is WRONG: want %d orders and %d cents everywhere, each order once", n, want)
	}
	fmt.Printf("OK: %d orders, %d cents, each order charged and booked exactly once\n", n, want)
	return nil
}

// waitCompleted polls the jobs until all are completed; one that ends in
// another terminal state is an error.
func waitCompleted(ctx context.Context, c *flow.Client, ids []string) ([]*flow.JobInfo, error) {
	infos := make([]*flow.JobInfo, len(ids))
	for i := 0; i < len(ids); {
		info, err := c.Job(ctx, ids[i])
		switch {
		case err != nil:
			return nil, err
		case info.State == flow.StateCompleted:
			infos[i] = info
			i++
		case info.State == flow.StateArchived || info.State == flow.StateQuarantined || info.State == flow.StateCancelled:
			return nil, fmt.Errorf("%s ended %s: %s", ids[i], info.State, info.LastError)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("waiting for %s (%s): %w", ids[i], info.State, ctx.Err())
		default:
			time.Sleep(20 * time.Millisecond)
		}
	}
	return infos, nil
}

// orphan describes a job's crash provenance, or is "" if it has none.
func orphan(o sluicetype.Orphan) string {
	if o.Count == 0 {
		return ""
	}
	return fmt.Sprintf("\n    orphan: reclaimed %dx from worker %s, whose lease expired at %s",
		o.Count, o.Holder, o.ExpiredAt.Format("15:04:05.000"))
}

// short is a stable 8-hex-digit digest of s, for made-up IDs.
func short(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
