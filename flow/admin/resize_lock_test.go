package admin_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// beforeResizeCAS is a go-redis hook that runs fn once, just before the
// first layout.lua 'resize' call (the compare and set that records a new
// layout) reaches Redis: another operator's action in the middle of a
// resize.
type beforeResizeCAS struct {
	fired atomic.Bool
	fn    func()
}

func (*beforeResizeCAS) DialHook(next redis.DialHook) redis.DialHook { return next }
func (*beforeResizeCAS) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *beforeResizeCAS) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args() // FCALL name numkeys key... mode ...
		var mode string
		if len(args) < 4 {
			return next(ctx, cmd)
		}
		if n, ok := args[2].(int); ok && len(args) > 3+n {
			mode = fmt.Sprint(args[3+n])
		}
		if lua.Layout.Is(cmd.Name(), fmt.Sprint(args[1])) && mode == "resize" && h.fired.CompareAndSwap(false, true) {
			h.fn()
		}
		return next(ctx, cmd)
	}
}

// interleaved registers queue q with 4 partitions, empty and paused, and
// returns a producer that read that count (one running through the
// resize), a partition key the 4-partition layout places on partition 3,
// and an admin client whose resize runs during before the new layout is
// recorded.
func interleaved(t *testing.T, q string, during func(a *fixture)) (*fixture, *flow.Client, string, *admin.Client) {
	t.Helper()
	rdb := env.Client(t)
	a := newAdmin(t, rdb, map[string]int{q: 4})
	ctx := context.Background()
	ok(t, a.ops.DeleteJob(ctx, a.enqueue(email{To: "first"}, flow.WithQueue(q)))) // registers 4 partitions
	stale, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: a.ns})
	ok(t, err)
	key := ""
	for i := 0; key == ""; i++ {
		r, err := stale.Enqueue(ctx, email{To: "x"}, flow.WithQueue(q), flow.WithPartitionKey("k"+strconv.Itoa(i)))
		ok(t, err)
		if strings.HasPrefix(r.ID, q+":3:") {
			key = "k" + strconv.Itoa(i)
		}
		ok(t, a.ops.DeleteJob(ctx, r.ID))
	}
	ok(t, a.ops.PauseQueue(ctx, q))
	other := env.Client(t)
	other.AddHook(&beforeResizeCAS{fn: func() { during(a) }})
	c, err := flow.NewClient(other, flow.ClientOptions{Namespace: a.ns})
	ok(t, err)
	return a, stale, key, admin.New(c)
}

// flag is the paused flag of partition i of queue q.
func (a *fixture) flag(q string, i int) string {
	return a.st.Client().Get(context.Background(), keys.Partition{NS: a.ns, Queue: q, Index: i}.Paused()).Val()
}

// TestConcurrentShrinks: two operators shrink the same paused queue at
// once, 4 -> 3 and, while the first is about to record, 4 -> 2. The second
// is refused at once (the first holds the queue's resize lock) and
// retires nothing; the first is recorded, and the partition it took away
// stays retired, so a producer still on the old count is refused there.
// Before the lock, the refused shrink brought back partitions the
// recorded one took away, where jobs were added that no worker claims.
func TestConcurrentShrinks(t *testing.T) {
	t.Parallel()
	var second error
	a, stale, key, first := interleaved(t, "cs", func(a *fixture) {
		second = a.ops.ResizeQueue(context.Background(), "cs", 2)
	})
	ctx := context.Background()
	ok(t, first.ResizeQueue(ctx, "cs", 3))
	if !errors.Is(second, admin.ErrResizeRefused) || !strings.Contains(second.Error(), "under way") {
		t.Fatalf("the shrink made during another: %v, want ErrResizeRefused (under way)", second)
	}
	if f := a.flag("cs", 2); f != "1" {
		t.Errorf("partition 2, which the refused shrink would have taken, has flag %q, want paused", f)
	}
	if f := a.flag("cs", 3); f != "r" {
		t.Errorf("partition 3, taken away by the recorded shrink, has flag %q, want retired", f)
	}
	if r, err := stale.Enqueue(ctx, email{To: "lost"}, flow.WithQueue("cs"), flow.WithPartitionKey(key)); !errors.Is(err, flow.ErrLayoutMismatch) {
		t.Errorf("a producer on the old count: %v, %v; want ErrLayoutMismatch", r, err)
	}
	ok(t, a.ops.ResizeQueue(ctx, "cs", 2)) // once the first is done
}

// TestResumeDuringShrink: an operator resumes the queue while a shrink
// to 2 is about to record its layout. The resume takes the resize lock,
// which cancels the shrink (refused, nothing recorded), brings back the
// partitions it retired and resumes all four. Before the lock, the
// resume cleared the retirement and the shrink still said ok: a queue
// of two partitions, running, whose partitions 2 and 3 took jobs no
// worker claims.
func TestResumeDuringShrink(t *testing.T) {
	t.Parallel()
	a, stale, key, shrink := interleaved(t, "rs", func(a *fixture) {
		if err := a.ops.ResumeQueue(context.Background(), "rs"); err != nil {
			t.Errorf("resume: %v", err)
		}
	})
	ctx := context.Background()
	if err := shrink.ResizeQueue(ctx, "rs", 2); !errors.Is(err, admin.ErrResizeRefused) || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("the shrink the resume cut short: %v, want ErrResizeRefused (cancelled)", err)
	}
	qs, err := a.ops.Queues(ctx)
	ok(t, err)
	if len(qs) != 1 || qs[0].Partitions != 4 || qs[0].Paused != 0 {
		t.Fatalf("queues after the resume: %+v, want 4 partitions, none paused", qs)
	}
	for i := range 4 {
		if f := a.flag("rs", i); f != "" {
			t.Errorf("partition %d has flag %q, want none (resumed)", i, f)
		}
	}
	r, err := stale.Enqueue(ctx, email{To: "kept"}, flow.WithQueue("rs"), flow.WithPartitionKey(key))
	ok(t, err)
	if !strings.HasPrefix(r.ID, "rs:3:") {
		t.Errorf("the job went to %s, want partition 3 (of the four)", r.ID)
	}
}

// TestPauseDuringShrink: pausing the queue while a shrink is about to
// record leaves what it retired retired, and the shrink is recorded.
// Before, the pause set the flag of partitions 2 and 3 back to paused,
// and the recorded layout of two partitions left them open to a
// producer on the old count.
func TestPauseDuringShrink(t *testing.T) {
	t.Parallel()
	a, stale, key, shrink := interleaved(t, "ps", func(a *fixture) {
		if err := a.ops.PauseQueue(context.Background(), "ps"); err != nil {
			t.Errorf("pause: %v", err)
		}
	})
	ctx := context.Background()
	ok(t, shrink.ResizeQueue(ctx, "ps", 2))
	for i, want := range []string{"1", "1", "r", "r"} {
		if f := a.flag("ps", i); f != want {
			t.Errorf("partition %d has flag %q, want %q", i, f, want)
		}
	}
	if _, err := stale.Enqueue(ctx, email{To: "lost"}, flow.WithQueue("ps"), flow.WithPartitionKey(key)); !errors.Is(err, flow.ErrLayoutMismatch) {
		t.Errorf("a producer on the old count: %v, want ErrLayoutMismatch", err)
	}
	// resuming the shrunk queue resumes its two, and leaves the others
	ok(t, shrink.ResumeQueue(ctx, "ps"))
	for i, want := range []string{"", "", "r", "r"} {
		if f := a.flag("ps", i); f != want {
			t.Errorf("after the resume, partition %d has flag %q, want %q", i, f, want)
		}
	}
}

// TestResizeToItsCountTakesBackRetired: a shrink whose tool died after
// retiring a partition, before recording, left it retired in the layout:
// a resize to the queue's count brings it back, paused, as a resume does.
func TestResizeToItsCountTakesBackRetired(t *testing.T) {
	t.Parallel()
	a, _, _, _ := interleaved(t, "tb", func(*fixture) {})
	ctx := context.Background()
	ok(t, a.st.Retire(ctx, a.st.Partition("tb", 3)))
	ok(t, a.ops.ResizeQueue(ctx, "tb", 4))
	if f := a.flag("tb", 3); f != "1" {
		t.Fatalf("partition 3 has flag %q after a resize to 4, want paused", f)
	}
}
