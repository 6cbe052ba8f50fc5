package web

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
)

// Layout of the scale test: queues of partitions each, jobs spread evenly.
const (
	scaleQueues     = 10
	scalePartitions = 4
	scaleRenders    = 200 // renders measured per page
)

// TestScale measures the console on a namespace of $SLUICE_WEB_SCALE jobs
// (1000000 for the documented figures) in 10 queues of 4 partitions, on a
// private redis-server: the p99 render time of the overview and queue
// pages, and the Redis commands per second of the live stream with 1 and
// with 20 open streams. It is skipped unless the variable is set:
//
//	SLUICE_WEB_SCALE=1000000 go test -run TestScale -v -timeout 20m ./web
func TestScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SLUICE_WEB_SCALE"))
	if n <= 0 {
		t.Skip("set SLUICE_WEB_SCALE=<jobs> to run the scale measurement")
	}
	srv, err := redisproc.StartServer()
	testkit.Must(t, err)
	t.Cleanup(func() { srv.Close() })
	rdb := srv.Client()
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()

	const ns = "scale"
	parts := map[string]int{}
	var queues []string
	for i := range scaleQueues {
		q := fmt.Sprintf("q%02d", i)
		parts[q] = scalePartitions
		queues = append(queues, q)
	}
	start := time.Now()
	load(t, rdb, ns, queues, n)
	mem, _ := rdb.Info(ctx, "memory").Result()
	t.Logf("loaded %d jobs in %s (%s)", n, time.Since(start).Round(time.Millisecond), infoField(mem, "used_memory_human"))

	// The console's own client counts the calls it sends (a script call is
	// one, whatever it runs inside).
	crdb := srv.Client()
	t.Cleanup(func() { crdb.Close() })
	sent := &callCounter{}
	crdb.AddHook(sent)
	c, err := flow.NewClient(crdb, flow.ClientOptions{Namespace: ns, Partitions: parts})
	testkit.Must(t, err)
	st := store.New(crdb, store.Config{NS: ns})
	for _, q := range queues {
		if _, _, err := st.RegisterLayout(ctx, q, scalePartitions); err != nil { // as a first enqueue would
			t.Fatal(err)
		}
	}
	con, err := newConsole(Options{Admin: admin.New(c)})
	testkit.Must(t, err)
	h := con.routes()

	// Renders: the overview with its snapshot read afresh each time (no
	// stream shares it), and queue pages in several states and a kind.
	measure := func(name, path string, fresh, bounded bool) {
		var ds []time.Duration
		calls0, usec0 := commandStats(t, rdb)
		for range scaleRenders {
			if fresh {
				con.hub.compute.Lock()
				con.hub.snap = nil
				con.hub.compute.Unlock()
			}
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.RemoteAddr = "127.0.0.1:1"
			rec := httptest.NewRecorder()
			t0 := time.Now()
			h.ServeHTTP(rec, req)
			ds = append(ds, time.Since(t0))
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: %d\n%s", path, rec.Code, rec.Body.String())
			}
		}
		calls1, usec1 := commandStats(t, rdb)
		slices.Sort(ds)
		p := func(q float64) time.Duration { return ds[int(q*float64(len(ds)-1))].Round(10 * time.Microsecond) }
		t.Logf("render %-34s p50 %8s  p99 %8s  max %8s  Redis: %5.1f commands, %6.0fµs per render", name, p(0.5), p(0.99),
			ds[len(ds)-1].Round(10*time.Microsecond), float64(calls1-calls0-1)/scaleRenders, float64(usec1-usec0)/scaleRenders)
		if bounded && p(0.99) > 50*time.Millisecond {
			t.Errorf("%s: p99 %s over 50ms", name, p(0.99))
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("load average: %s", strings.TrimSpace(string(load)))
	measure("overview (snapshot read each time)", "/", true, true)
	measure("overview (snapshot shared, 1s)", "/", false, true)
	measure("queue, available", "/queues/q03", false, true)
	measure("queue, completed", "/queues/q03?state=completed", false, true)
	measure("queue, archived", "/queues/q03?state=archived", false, true)
	// A kind filter examines jobs of other kinds too: its cost grows as
	// the kind gets rarer, so it is measured, not bounded.
	measure("queue, archived, kind=invoice", "/queues/q03?state=archived&kind=invoice", false, false)

	// The live stream's cost with 1 and with 20 open streams.
	web := httptest.NewServer(h)
	t.Cleanup(web.Close)
	per := func(streams int) float64 {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ready := make(chan struct{}, streams)
		for range streams {
			go func() {
				req, _ := http.NewRequestWithContext(cctx, http.MethodGet, web.URL+"/events", nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					ready <- struct{}{}
					return
				}
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				sc.Buffer(make([]byte, 1<<20), 1<<20)
				signalled := false
				for sc.Scan() {
					if !signalled && strings.HasPrefix(sc.Text(), "event: overview") {
						ready <- struct{}{}
						signalled = true
					}
				}
			}()
		}
		for range streams {
			<-ready
		}
		before, sent0, live0 := commands(t, rdb), sent.calls.Load(), sent.live.Load()
		const window = 10 * time.Second
		time.Sleep(window) // the measurement window: the poller runs on its own clock
		after, sent1, live1 := commands(t, rdb), sent.calls.Load(), sent.live.Load()
		rate := float64(after-before-1) / window.Seconds() // the INFO call itself counts once
		calls := float64(sent1-sent0) / window.Seconds()
		perPart := float64(live1-live0) / window.Seconds() / (scaleQueues * scalePartitions)
		t.Logf("live stream with %2d open: %.1f calls/s sent, of which %.2f live reads per partition per second; %.1f Redis commands/s run",
			streams, calls, perPart, rate)
		if perPart > 1.1 {
			t.Errorf("%d streams: %.2f live reads per partition per second", streams, perPart)
		}
		return calls
	}
	one, twenty := per(1), per(20)
	if twenty > one*1.2+1 {
		t.Errorf("20 streams cost %.1f calls/s, 1 stream %.1f: the stream is not shared", twenty, one)
	}
}

// callCounter counts the commands a client sends, and among them the
// calls of the live-read script.
type callCounter struct{ calls, live atomic.Int64 }

func (c *callCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *callCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}

func (c *callCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *callCounter) count(cmd redis.Cmder) {
	c.calls.Add(1)
	if args := cmd.Args(); len(args) > 1 && lua.Live.Is(cmd.Name(), fmt.Sprint(args[1])) {
		c.live.Add(1)
	}
}

// commands is the total of Redis's command counters.
func commands(t *testing.T, rdb redis.UniversalClient) int64 {
	calls, _ := commandStats(t, rdb)
	return calls
}

// commandStats sums Redis's command counters: calls, and microseconds
// spent running them.
func commandStats(t *testing.T, rdb redis.UniversalClient) (calls, usec int64) {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	testkit.Must(t, err)
	for line := range strings.SplitSeq(info, "\n") {
		_, rest, ok := strings.Cut(line, ":calls=")
		if !ok {
			continue
		}
		v, rest, _ := strings.Cut(rest, ",")
		n, _ := strconv.ParseInt(v, 10, 64)
		calls += n
		if _, u, ok := strings.Cut(rest, "usec="); ok {
			u, _, _ = strings.Cut(u, ",")
			m, _ := strconv.ParseInt(u, 10, 64)
			usec += m
		}
	}
	return calls, usec
}

func infoField(info, field string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// load writes n jobs over queues' partitions in the store's key layout,
// pipelined: half completed, a fifth archived, a fifth available, a tenth
// scheduled, with the per-state counters the scripts keep.
func load(t *testing.T, rdb redis.UniversalClient, ns string, queues []string, n int) {
	t.Helper()
	ctx := context.Background()
	payload, _ := msgpack.Marshal(map[string]any{"order": "A-1042", "cents": 1999})
	kinds := []string{"email", "invoice", "resize", "sync", "report"}
	now := time.Now().UnixMilli()
	const batch = 5000
	pipe := rdb.Pipeline()
	for i := range n {
		// j is the job's number in its queue: its state is j%10, its
		// partition j/10%4, its kind j/40%5
		j := i / len(queues)
		p := keys.Partition{NS: ns, Queue: queues[i%len(queues)], Index: j / 10 % scalePartitions}
		local := fmt.Sprintf("j%08d", i)
		created := now - int64(n-i)*10
		f := []any{keys.FieldKind, kinds[j/40%len(kinds)], keys.FieldPriority, "0", keys.FieldAttempt, "0",
			keys.FieldCrashAttempt, "0", keys.FieldMaxAttempts, "25", keys.FieldCreated, created, keys.FieldFence, "1",
			keys.FieldPayload, payload}
		var state string
		switch r := j % 10; {
		case r < 5:
			state = flow.StateCompleted
			f = append(f, keys.FieldState, "5", keys.FieldFinished, created+5)
			pipe.ZAdd(ctx, p.Terminal(state), redis.Z{Score: float64(created + 5 + 86400000), Member: local})
		case r < 7:
			state = flow.StateArchived
			f = append(f, keys.FieldState, "6", keys.FieldFinished, created+5, keys.FieldReason, "attempts_exhausted",
				keys.FieldLastError, "upstream said 503")
			pipe.ZAdd(ctx, p.Terminal(state), redis.Z{Score: float64(created + 5 + 7*86400000), Member: local})
		case r < 9:
			state = flow.StateAvailable
			f = append(f, keys.FieldState, "1")
			pipe.RPush(ctx, p.Available(0), local)
		default:
			state = flow.StateScheduled
			f = append(f, keys.FieldState, "2", keys.FieldRunAt, now+int64(i))
			pipe.ZAdd(ctx, p.Sched(), redis.Z{Score: float64(now + int64(i)), Member: local})
		}
		pipe.HSet(ctx, p.Job(local), f...)
		pipe.HIncrBy(ctx, p.Stats(), state, 1)
		if (i+1)%batch == 0 || i == n-1 {
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}
