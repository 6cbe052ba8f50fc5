package flow_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

type tenantJob struct {
	Tenant string
	I      int
}

func (tenantJob) Kind() string { return "tenant_job" }

// TestConcurrencyCeilingFleet: 50 workers together never run more than 3
// jobs of a tenant at once, sampled in Redis and in the handlers.
func TestConcurrencyCeilingFleet(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	reg := flow.NewRegistry()
	var mu sync.Mutex
	running, peak := map[string]int{}, map[string]int{}
	release := make(chan struct{})
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[tenantJob]) error {
		mu.Lock()
		running[job.Args.Tenant]++
		peak[job.Args.Tenant] = max(peak[job.Args.Tenant], running[job.Args.Tenant])
		mu.Unlock()
		<-release
		mu.Lock()
		running[job.Args.Tenant]--
		mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c, ns := newClient(t, rdb, reg)
	var items []flow.Item
	for i := range 60 {
		tenant := fmt.Sprint("tenant-", i%3)
		items = append(items, flow.Item{Args: tenantJob{Tenant: tenant, I: i}, Opts: []flow.EnqueueOption{flow.WithConcurrencyLimit(tenant, 3)}})
	}
	if _, err := c.EnqueueMany(context.Background(), items...); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Concurrency: 2}, nil)
	}
	ccKey := "{" + ns + ":default:0}:cc"
	for i := range 60 {
		// Let one job finish at a time (a running handler takes the
		// release) and sample the counters in between.
		select {
		case release <- struct{}{}:
		case <-time.After(testkit.Timeout):
			t.Fatalf("only %d of 60 jobs done: none runs", i)
		}
		counts, err := rdb.HGetAll(context.Background(), ccKey).Result()
		if err != nil {
			t.Fatal(err)
		}
		for tenant, n := range counts {
			if n > "3" {
				t.Fatalf("Redis counts %s running for %s", n, tenant)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for tenant, p := range peak {
		if p > 3 {
			t.Fatalf("%s peaked at %d running jobs", tenant, p)
		}
	}
}

type mailJob struct{ I int }

func (mailJob) Kind() string { return "mail_job" }

type pingJob struct{ I int }

func (pingJob) Kind() string { return "ping_job" }

// TestRateClassDoesNotBlockOthers: jobs of a slow rate class wait without
// delaying unlimited work queued behind them, and start at the rate.
func TestRateClassDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	reg := flow.NewRegistry()
	var mails atomic.Int64
	pinged := make(chan struct{}, 200)
	_ = flow.Register(reg, func(context.Context, *flow.Job[mailJob]) error { mails.Add(1); return nil })
	_ = flow.Register(reg, func(context.Context, *flow.Job[pingJob]) error { pinged <- struct{}{}; return nil })
	c, ns := newClient(t, rdb, reg)
	var items []flow.Item
	for i := range 500 {
		items = append(items, flow.Item{Args: mailJob{I: i}, Opts: []flow.EnqueueOption{flow.WithRateLimit("smtp", flow.RateLimit{Jobs: 5, Per: time.Second})}})
	}
	for i := range 200 {
		items = append(items, flow.Item{Args: pingJob{I: i}})
	}
	if _, err := c.EnqueueMany(context.Background(), items...); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	// Held up behind the mails, the pings would wait 100 s (500 at 5/s).
	for i := range 200 {
		testkit.Recv(t, pinged, fmt.Sprintf("unlimited job %d of 200 (held up behind the rate-limited ones?)", i+1))
	}
	// 5 per second with a burst of 5: at most 5 + 5*elapsed have started.
	if m := mails.Load(); float64(m) > 5+5*time.Since(start).Seconds()+1 {
		t.Fatalf("%d rate-limited jobs ran in %s", m, time.Since(start))
	}
}

// TestRateClassFleet: 3 workers share a class of 200 jobs/s for 10 s: the
// observed rate is within 10% of the limit and no 1-second window exceeds
// it by more than the burst.
func TestRateClassFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	t.Parallel()
	rdb := realRedis(t)
	reg := flow.NewRegistry()
	var mu sync.Mutex
	var starts []time.Time
	_ = flow.Register(reg, func(_ context.Context, job *flow.Job[mailJob]) error {
		mu.Lock()
		starts = append(starts, job.Claimed) // store time: when the token was taken
		mu.Unlock()
		return nil
	})
	c, ns := newClient(t, rdb, reg)
	const rate, burst, window = 200, 20, 10 * time.Second
	var items []flow.Item
	for i := range 2600 {
		items = append(items, flow.Item{Args: mailJob{I: i}, Opts: []flow.EnqueueOption{flow.WithRateLimit("api", flow.RateLimit{Jobs: rate, Per: time.Second, Burst: burst})}})
	}
	if _, err := c.EnqueueMany(context.Background(), items...); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	}
	// Not a wait but the measurement itself: jobs start at the class's
	// rate meanwhile, in real time (the rate limit is in store time).
	time.Sleep(window)
	mu.Lock()
	defer mu.Unlock()
	if len(starts) == 0 {
		t.Fatal("nothing ran")
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	first := starts[0]
	var n int
	for _, s := range starts {
		if s.Sub(first) < window-200*time.Millisecond {
			n++
		}
	}
	observed := float64(n) / (window - 200*time.Millisecond).Seconds()
	if observed < rate*0.9-burst || observed > rate*1.1+burst {
		t.Fatalf("observed %.0f jobs/s, want about %d", observed, rate)
	}
	for i := range starts {
		j := i
		for j < len(starts) && starts[j].Sub(starts[i]) < time.Second {
			j++
		}
		if j-i > rate+burst {
			t.Fatalf("%d jobs started within one second from %v", j-i, starts[i].Sub(first))
		}
	}
}

type weighted struct{ Q string }

func (weighted) Kind() string { return "weighted" }

// TestWeightedQueues: under saturation, queues weighted 6/3/1 are served
// in that ratio (within 10%), the lightest included.
func TestWeightedQueues(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	reg := flow.NewRegistry()
	var mu sync.Mutex
	served := map[string]int{}
	total := 0
	_ = flow.Register(reg, func(ctx context.Context, job *flow.Job[weighted]) error {
		mu.Lock()
		if total < 1000 {
			served[job.Args.Q]++
			total++
		}
		mu.Unlock()
		return nil
	})
	c, ns := newClient(t, rdb, reg)
	weights := map[string]int{"critical": 6, "default": 3, "low": 1}
	var items []flow.Item
	for q := range weights {
		for range 1000 {
			items = append(items, flow.Item{Args: weighted{Q: q}, Opts: []flow.EnqueueOption{flow.WithQueue(q)}})
		}
	}
	if _, err := c.EnqueueMany(context.Background(), items...); err != nil {
		t.Fatal(err)
	}
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Queues: weights, Concurrency: 4, ClaimBatch: 4}, nil)
	// A handler counts before its job is settled.
	testkit.Until(t, &w.Sig.Settled, nil, "1,000 jobs served", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return total >= 1000, fmt.Sprint(total)
	})
	mu.Lock()
	defer mu.Unlock()
	for q, w := range weights {
		want := 1000 * w / 10
		if got := served[q]; got < want*9/10 || got > want*11/10 {
			t.Errorf("queue %s served %d of the first 1000, want %d ±10%% (all: %v)", q, got, want, served)
		}
	}
}

// TestUniqueThroughClient: WithUnique and WithUniqueArgs through the client,
// across partitions.
func TestUniqueThroughClient(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Partitions: map[string]int{"default": 4}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := c.Enqueue(ctx, email{To: "a"}, flow.WithUniqueArgs(0, flow.KeepExisting))
	if err != nil || first.Duplicate {
		t.Fatalf("first: %+v %v", first, err)
	}
	for range 5 { // any partition the round-robin would pick
		again, err := c.Enqueue(ctx, email{To: "a"}, flow.WithUniqueArgs(0, flow.KeepExisting))
		if err != nil || !again.Duplicate || !again.Unique || again.ID != first.ID {
			t.Fatalf("duplicate: %+v %v (first %s)", again, err, first.ID)
		}
	}
	other, err := c.Enqueue(ctx, email{To: "b"}, flow.WithUniqueArgs(0, flow.KeepExisting))
	if err != nil || other.Duplicate {
		t.Fatalf("other args: %+v %v", other, err)
	}
	for _, bad := range []flow.EnqueueOption{
		flow.WithUnique("", 0, flow.KeepExisting), flow.WithUnique("k", -time.Second, flow.KeepExisting),
		flow.WithUnique("k", 0, "sometimes"), flow.WithRateLimit("r", flow.RateLimit{Jobs: 0, Per: time.Second}),
		flow.WithRateLimit("r", flow.RateLimit{Jobs: 5, Per: -time.Second}), flow.WithRateLimit("", flow.RateLimit{Jobs: 5, Per: time.Second}),
		flow.WithConcurrencyLimit("t", 0), flow.WithConcurrencyLimit("", 3),
	} {
		if _, err := c.Enqueue(ctx, email{To: "x"}, bad); !errors.Is(err, flow.ErrInvalid) {
			t.Fatalf("bad option accepted: %v", err)
		}
	}
}

// TestRateLimitOptionShared: one WithRateLimit option used by concurrent
// producers (as a package-level option would be) is safe under -race: the
// option must not write the RateLimit it captured.
func TestRateLimitOptionShared(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	c, _ := newClient(t, rdb, nil)
	opt := flow.WithRateLimit("shared", flow.RateLimit{Jobs: 5, Per: time.Second})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			if _, err := c.Enqueue(context.Background(), email{To: "a@example.com"}, opt); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestHeadersBounded: a job's headers are bounded as its arguments are
// (MaxPayload bounds the arguments alone): past MaxHeaders bytes the job
// is refused, and nothing is added.
func TestHeadersBounded(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t, realRedis(t), nil)
	big := map[string]string{"blob": strings.Repeat("x", flow.MaxHeaders)}
	if _, err := c.Enqueue(context.Background(), email{To: "x"}, flow.WithHeaders(big)); !errors.Is(err, flow.ErrPayloadTooLarge) {
		t.Errorf("headers of %d bytes: %v, want ErrPayloadTooLarge", flow.MaxHeaders, err)
	}
	ok := map[string]string{"traceparent": strings.Repeat("0", 55)}
	if _, err := c.Enqueue(context.Background(), email{To: "x"}, flow.WithHeaders(ok)); err != nil {
		t.Errorf("small headers: %v", err)
	}
}
