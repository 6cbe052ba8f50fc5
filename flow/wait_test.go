package flow_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/chaos"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// squareJob's handler returns N*N, or fails (Skip) when Fail is set.
type squareJob struct {
	N    int
	Fail bool
}

func (squareJob) Kind() string { return "wait.square" }

func squareRegistry(t *testing.T) *flow.Registry {
	t.Helper()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.RegisterResult(reg, func(_ context.Context, job *flow.Job[squareJob]) (int, error) {
		if job.Args.Fail {
			return 0, flow.Skip("no square today")
		}
		return job.Args.N * job.Args.N, nil
	}))
	return reg
}

// waitBackend is a Redis that Wait tests run on, with the partitions of
// the default queue there.
type waitBackend struct {
	name  string
	rdb   redis.UniversalClient
	parts map[string]int
}

func waitBackends(t *testing.T, mini bool) []waitBackend {
	t.Helper()
	out := []waitBackend{
		{"redis", env.Server.Client(), nil},
		{"cluster", env.Cluster.Client(), map[string]int{"default": 4}},
	}
	if mini {
		m := miniredis.RunT(t)
		out = append(out, waitBackend{"miniredis", redis.NewClient(&redis.Options{Addr: m.Addr()}), nil})
	}
	t.Cleanup(func() {
		for _, b := range out {
			b.rdb.Close()
		}
	})
	return out
}

// waitClient is a client of a namespace of its own on rdb, with poll as
// its Wait poll interval (0: the default).
func waitClient(t *testing.T, rdb redis.UniversalClient, parts map[string]int, poll time.Duration) (*flow.Client, string) {
	t.Helper()
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Partitions: parts})
	testkit.Must(t, err)
	if poll > 0 {
		flow.SetWaitPoll(c, poll)
	}
	return c, ns
}

func enqueueID(t *testing.T, c *flow.Client, args flow.Args, opts ...flow.EnqueueOption) string {
	t.Helper()
	res, err := c.Enqueue(context.Background(), args, opts...)
	testkit.Must(t, err)
	return res.ID
}

// isWatched reports whether Wait has marked job id (lua/watch.lua).
func isWatched(t *testing.T, rdb redis.UniversalClient, ns, id string) bool {
	t.Helper()
	ref, ok := keys.ParseRef(ns, id)
	if !ok {
		t.Fatalf("bad ID %q", id)
	}
	n, err := rdb.HExists(context.Background(), ref.Job(ref.Local), keys.FieldWatched).Result()
	testkit.Must(t, err)
	return n
}

// awaitWatched waits until Wait has marked job id: it is subscribed by
// then (add comes before the mark).
func awaitWatched(t *testing.T, rdb redis.UniversalClient, ns, id string) {
	t.Helper()
	redistest.Eventually(t, "job "+id+" to be watched", func() bool { return isWatched(t, rdb, ns, id) })
}

type waitOutcome struct {
	info *flow.JobInfo
	err  error
}

// waitAsync runs c.Wait(ctx, id) in the background.
func waitAsync(ctx context.Context, c *flow.Client, id string) <-chan waitOutcome {
	ch := make(chan waitOutcome, 1)
	go func() {
		info, err := c.Wait(ctx, id)
		ch <- waitOutcome{info, err}
	}()
	return ch
}

// wantCompleted checks a Wait outcome: job id completed with result want.
func wantCompleted(t *testing.T, o waitOutcome, id string, want int) {
	t.Helper()
	if o.err != nil {
		t.Fatalf("Wait(%s): %v", id, o.err)
	}
	var got int
	if o.info.ID != id || o.info.State != flow.StateCompleted || o.info.DecodeResult(&got) != nil || got != want {
		t.Fatalf("Wait(%s): %s %s result %d, want completed %d", id, o.info.ID, o.info.State, got, want)
	}
}

// TestWaitLater: Wait on a job that finishes later returns it once a
// worker completed it, and Result decodes its result; on miniredis, a
// real Redis and a cluster (partitions on every node: the announcement
// reaches a subscriber on another node).
func TestWaitLater(t *testing.T) {
	t.Parallel()
	for _, b := range waitBackends(t, true) {
		t.Run(b.name, func(t *testing.T) {
			c, ns := waitClient(t, b.rdb, b.parts, time.Hour) // an hour: the announcement, not the poll
			var ids []string
			var outs []<-chan waitOutcome
			for i := range 8 {
				id := enqueueID(t, c, squareJob{N: i})
				ids = append(ids, id)
				outs = append(outs, waitAsync(context.Background(), c, id))
			}
			for _, id := range ids {
				awaitWatched(t, b.rdb, ns, id)
			}
			reg := squareRegistry(t)
			testkit.StartWorker(t, b.rdb, reg, runtime.Options{Namespace: ns, Partitions: b.parts}, nil)
			for i, ch := range outs {
				wantCompleted(t, testkit.Recv(t, ch, "Wait of "+ids[i]), ids[i], i*i)
				if isWatched(t, b.rdb, ns, ids[i]) {
					t.Errorf("job %s is still marked watched after it finished", ids[i])
				}
			}
			// Result on a job that finishes later
			id := enqueueID(t, c, squareJob{N: 12})
			r, err := flow.Result[int](context.Background(), c, id)
			if err != nil || r != 144 {
				t.Fatalf("Result: %d %v", r, err)
			}
		})
	}
}

// TestWaitFinished: Wait on a job that has finished already returns at
// once (the poll is an hour away), and marks nothing; Result of a job that
// did not complete is a *NotCompletedError that says its state and
// reason, and a result of another type fails to decode.
func TestWaitFinished(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	c, ns := waitClient(t, rdb, nil, time.Hour)
	w := testkit.StartWorker(t, rdb, squareRegistry(t), runtime.Options{Namespace: ns}, nil)
	ok := enqueueID(t, c, squareJob{N: 3})
	bad := enqueueID(t, c, squareJob{N: 4, Fail: true})
	testkit.WaitState(t, c, w.Sig, ok, flow.StateCompleted)
	testkit.WaitState(t, c, w.Sig, bad, flow.StateArchived)

	info, err := c.Wait(context.Background(), ok)
	wantCompleted(t, waitOutcome{info, err}, ok, 9)
	if isWatched(t, rdb, ns, ok) {
		t.Error("Wait marked a finished job")
	}
	if r, err := flow.Result[int](context.Background(), c, ok); err != nil || r != 9 {
		t.Fatalf("Result: %d %v", r, err)
	}
	if _, err := flow.Result[string](context.Background(), c, ok); !errors.Is(err, flow.ErrResultType) || !strings.Contains(err.Error(), ok) {
		t.Fatalf("Result of another type: %v, want ErrResultType naming the job", err)
	}

	info, err = c.Wait(context.Background(), bad)
	if err != nil || info.State != flow.StateArchived {
		t.Fatalf("Wait on an archived job: %+v %v", info, err)
	}
	_, err = flow.Result[int](context.Background(), c, bad)
	var nc *flow.NotCompletedError
	if !errors.As(err, &nc) || nc.ID != bad || nc.State != flow.StateArchived || nc.Reason != "skipped" || nc.Job == nil {
		t.Fatalf("Result of an archived job: %#v", err)
	}
	if !strings.Contains(err.Error(), bad+" archived (skipped)") {
		t.Errorf("error text %q", err)
	}
}

// TestWaitErrors: an unknown job is ErrNotFound, a malformed ID
// ErrInvalid, and a wait whose context ends returns its error and lets
// the subscription go.
func TestWaitErrors(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	c, ns := waitClient(t, rdb, nil, 0)
	if _, err := c.Wait(context.Background(), "default:0:nope"); !errors.Is(err, flow.ErrNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
	if _, err := flow.Result[int](context.Background(), c, "default:0:nope"); !errors.Is(err, flow.ErrNotFound) {
		t.Fatalf("Result of an unknown job: %v", err)
	}
	for _, id := range []string{"", "nope", "default:x:1", "default:0:"} {
		if _, err := c.Wait(context.Background(), id); !errors.Is(err, flow.ErrInvalid) {
			t.Fatalf("Wait(%q): %v, want ErrInvalid", id, err)
		}
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	id := enqueueID(t, c, squareJob{N: 1}) // no worker: it never finishes
	if _, err := c.Wait(done, id); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled context: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	out := waitAsync(ctx, c, id)
	awaitWatched(t, rdb, ns, id)
	ref, _ := keys.ParseRef(ns, id)
	redistest.Eventually(t, "the subscription", func() bool { return numSub(t, rdb, ref.DoneChannel()) == 1 })
	cancel()
	if o := testkit.Recv(t, out, "the cancelled Wait"); !errors.Is(o.err, context.Canceled) {
		t.Fatalf("cancelled Wait: %v", o.err)
	}
	redistest.Eventually(t, "the subscription to end", func() bool { return numSub(t, rdb, ref.DoneChannel()) == 0 })

	// A deadline
	ctx, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := c.Wait(ctx, id); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past its deadline: %v", err)
	}
}

func numSub(t *testing.T, rdb redis.UniversalClient, channel string) int64 {
	t.Helper()
	m, err := rdb.PubSubNumSub(context.Background(), channel).Result()
	testkit.Must(t, err)
	return m[channel]
}

// TestWaitMany: hundreds of concurrent Wait calls of one client share one
// subscriber connection with one subscription per partition, and each
// gets its own job.
func TestWaitMany(t *testing.T) {
	t.Parallel()
	const n, parts = 300, 3
	name := "waitmany-" + fmt.Sprint(time.Now().UnixNano())
	rdb := redis.NewClient(&redis.Options{Addr: env.Server.Addr(), ClientName: name, PoolSize: 50})
	t.Cleanup(func() { rdb.Close() })
	partitions := map[string]int{"default": parts}
	c, ns := waitClient(t, rdb, partitions, time.Hour)
	ids := make([]string, n)
	outs := make([]<-chan waitOutcome, n)
	for i := range n {
		ids[i] = enqueueID(t, c, squareJob{N: i})
		outs[i] = waitAsync(context.Background(), c, ids[i])
	}
	for _, id := range ids {
		awaitWatched(t, rdb, ns, id)
	}
	for p := range parts {
		ch := keys.Partition{NS: ns, Queue: "default", Index: p}.DoneChannel()
		if got := numSub(t, rdb, ch); got != 1 {
			t.Errorf("%d subscriptions to %s, want 1", got, ch)
		}
	}
	list, err := rdb.ClientList(context.Background()).Result()
	testkit.Must(t, err)
	subscribers := 0
	for l := range strings.SplitSeq(list, "\n") {
		if strings.Contains(l, " name="+name+" ") && !strings.Contains(l, " sub=0 ") {
			subscribers++
			if !strings.Contains(l, fmt.Sprintf(" sub=%d ", parts)) {
				t.Errorf("the subscriber: %s", l)
			}
		}
	}
	if subscribers != 1 {
		t.Fatalf("%d subscriber connections, want 1:\n%s", subscribers, list)
	}
	testkit.StartWorker(t, env.Server.Client(), squareRegistry(t), runtime.Options{Namespace: ns, Partitions: partitions, Concurrency: 20}, nil)
	for i, ch := range outs {
		wantCompleted(t, testkit.Recv(t, ch, "Wait of "+ids[i]), ids[i], i*i)
	}
	for p := range parts {
		ch := keys.Partition{NS: ns, Queue: "default", Index: p}.DoneChannel()
		redistest.Eventually(t, "no subscription to "+ch, func() bool { return numSub(t, rdb, ch) == 0 })
	}
}

// TestWaitReconnect: a job that finishes while the waiting client's
// connections are cut (its announcement goes to no one) is seen when the
// subscriber reconnects, through the check of its jobs that the new
// subscription starts (the poll is an hour away).
func TestWaitReconnect(t *testing.T) {
	t.Parallel()
	direct := realRedis(t)
	via, cut, reconnect := cuttableClient(t)
	c, ns := waitClient(t, via, nil, time.Hour)
	direct2, err := flow.NewClient(direct, flow.ClientOptions{Namespace: ns})
	testkit.Must(t, err)

	id := enqueueID(t, direct2, squareJob{N: 5})
	out := waitAsync(context.Background(), c, id)
	awaitWatched(t, direct, ns, id)
	ref, _ := keys.ParseRef(ns, id)
	redistest.Eventually(t, "the subscription", func() bool { return numSub(t, direct, ref.DoneChannel()) == 1 })

	cut() // every connection of the waiting client cut, none can be made
	redistest.Eventually(t, "the subscription to be gone", func() bool { return numSub(t, direct, ref.DoneChannel()) == 0 })
	w := testkit.StartWorker(t, direct, squareRegistry(t), runtime.Options{Namespace: ns}, nil)
	testkit.WaitState(t, direct2, w.Sig, id, flow.StateCompleted)
	testkit.NoRecv(t, out, "a Wait result while disconnected")

	reconnect()
	wantCompleted(t, testkit.Recv(t, out, "the Wait after reconnecting"), id, 25)
}

// TestWaitFallback: a job whose announcement never comes (its mark
// removed behind the waiter's back) is found by the poll.
func TestWaitFallback(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	c, ns := waitClient(t, rdb, nil, 20*time.Millisecond)
	id := enqueueID(t, c, squareJob{N: 6})
	out := waitAsync(context.Background(), c, id)
	awaitWatched(t, rdb, ns, id)
	ref, _ := keys.ParseRef(ns, id)
	testkit.Must(t, rdb.HDel(context.Background(), ref.Job(ref.Local), keys.FieldWatched).Err())
	testkit.Must(t, rdb.SRem(context.Background(), ref.Watching(), ref.Local).Err())
	testkit.StartWorker(t, rdb, squareRegistry(t), runtime.Options{Namespace: ns}, nil)
	wantCompleted(t, testkit.Recv(t, out, "the Wait"), id, 36)
}

// TestWaitDiscarded: where completed jobs are deleted at once, a watched
// job is kept for its waiter, which reads its result; one nobody watches
// is deleted as before.
func TestWaitDiscarded(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	c, ns := waitClient(t, rdb, nil, time.Hour)
	watched := enqueueID(t, c, squareJob{N: 7})
	other := enqueueID(t, c, squareJob{N: 8})
	out := waitAsync(context.Background(), c, watched)
	awaitWatched(t, rdb, ns, watched)
	testkit.StartWorker(t, rdb, squareRegistry(t), runtime.Options{Namespace: ns, DiscardCompleted: true}, nil)
	wantCompleted(t, testkit.Recv(t, out, "the Wait"), watched, 49)
	if r, err := flow.Result[int](context.Background(), c, watched); err != nil || r != 49 {
		t.Fatalf("Result after the Wait: %d %v", r, err)
	}
	redistest.Eventually(t, "the unwatched job to be deleted", func() bool {
		_, err := c.Job(context.Background(), other)
		return errors.Is(err, flow.ErrNotFound)
	})
}

// TestWaitOperator: an operator's cancel of a job ends its wait with the
// cancelled job, and an operator's delete with ErrNotFound, at once (the
// poll is an hour away).
func TestWaitOperator(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	c, ns := waitClient(t, rdb, nil, time.Hour)
	adm := admin.New(c)
	cancelled := enqueueID(t, c, squareJob{N: 1})
	deleted := enqueueID(t, c, squareJob{N: 2})
	outC := waitAsync(context.Background(), c, cancelled)
	outD := waitAsync(context.Background(), c, deleted)
	awaitWatched(t, rdb, ns, cancelled)
	awaitWatched(t, rdb, ns, deleted)
	_, err := adm.CancelJob(context.Background(), cancelled)
	testkit.Must(t, err)
	if o := testkit.Recv(t, outC, "the Wait of the cancelled job"); o.err != nil || o.info.State != flow.StateCancelled || o.info.Reason != "operator" {
		t.Fatalf("Wait of a cancelled job: %+v %v", o.info, o.err)
	}
	testkit.Must(t, adm.DeleteJob(context.Background(), deleted))
	if o := testkit.Recv(t, outD, "the Wait of the deleted job"); !errors.Is(o.err, flow.ErrNotFound) {
		t.Fatalf("Wait of a deleted job: %+v %v", o.info, o.err)
	}
	_, err = flow.Result[int](context.Background(), c, cancelled)
	if nc := (*flow.NotCompletedError)(nil); !errors.As(err, &nc) || nc.State != flow.StateCancelled || nc.Reason != "operator" {
		t.Fatalf("Result of a cancelled job: %v", err)
	}
}

// callParent calls a squareJob child as a durable step and returns what
// it got: the square, or the error that names the failed child.
type callParent struct {
	N    int
	Fail bool
}

func (callParent) Kind() string { return "wait.call_parent" }

// TestCall: a handler calls a child job as a durable step (flow.Call),
// suspended without holding a worker (concurrency 1) until the child
// finishes, and gets its result; a failed child is an error that names
// it. On a real Redis and on a cluster with the child in any partition.
func TestCall(t *testing.T) {
	t.Parallel()
	for _, b := range waitBackends(t, false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			c, ns := waitClient(t, b.rdb, b.parts, 0)
			reg := squareRegistry(t)
			var runs atomic.Int64
			testkit.Must(t, flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[callParent]) (string, error) {
				runs.Add(1)
				sq, err := flow.Call[int](ctx, "square", squareJob{N: job.Args.N, Fail: job.Args.Fail})
				if cf := (*flow.ChildFailedError)(nil); errors.As(err, &cf) {
					return "failed: " + err.Error(), nil
				}
				if err != nil {
					return "", err // the *WaitingError while the child runs
				}
				return fmt.Sprintf("square %d", sq), nil
			}))
			testkit.StartWorker(t, b.rdb, reg, runtime.Options{Namespace: ns, Partitions: b.parts, Concurrency: 1}, nil)
			got, err := flow.Result[string](context.Background(), c, enqueueID(t, c, callParent{N: 9}))
			if err != nil || got != "square 81" {
				t.Fatalf("parent: %q %v", got, err)
			}
			if runs.Load() < 2 {
				t.Fatalf("the parent ran %d times: it should have been suspended", runs.Load())
			}
			parent := enqueueID(t, c, callParent{N: 2, Fail: true})
			got, err = flow.Result[string](context.Background(), c, parent)
			if err != nil || !strings.HasPrefix(got, `failed: call "square": child `) || !strings.Contains(got, " archived: no square today") {
				t.Fatalf("parent of a failed child: %q %v", got, err)
			}
			info, err := c.Job(context.Background(), parent)
			testkit.Must(t, err)
			if info.Attempt != 0 {
				t.Fatalf("the parent spent %d attempts waiting", info.Attempt)
			}
		})
	}
}

// TestCallOutsideHandler: Call needs a running attempt.
func TestCallOutsideHandler(t *testing.T) {
	if _, err := flow.Call[int](context.Background(), "x", squareJob{}); err == nil {
		t.Fatal("Call outside a handler did not fail")
	}
}

// cuttableClient is a client of the shared server through a proxy; cut
// closes the proxy (every connection cut, none can be made) and
// reconnect lets the client connect again, through a new one.
func cuttableClient(t *testing.T) (via *redis.Client, cut, reconnect func()) {
	t.Helper()
	var addr atomic.Value
	proxy := func() {
		px, err := chaos.NewProxy(env.Server.Addr())
		testkit.Must(t, err)
		t.Cleanup(func() { px.Close() })
		addr.Store(px)
	}
	proxy()
	via = redis.NewClient(&redis.Options{
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr.Load().(*chaos.Proxy).Addr())
		},
	})
	t.Cleanup(func() { via.Close() })
	return via, func() { addr.Load().(*chaos.Proxy).Close() }, proxy
}
