package store_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestLayoutRegistry: the first registration of a queue records its
// count, a second (another process, or a re-sent call) finds the first
// whatever count it asks for; a resize is a compare and set on the
// version that answers a re-send as it answered the first delivery and
// refuses a stale version; listing, reading and the namespace set see
// the same. On miniredis, a real Redis and a cluster.
func TestLayoutRegistry(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			ns := redistest.NewNamespace(t)
			clk := &testClock{now: time.UnixMilli(1_700_000_000_000)}
			st := store.New(b.rdb, store.Config{NS: ns, Now: clk.Now})
			want := store.Layout{Queue: "q", Partitions: 4, Version: 1, Registered: clk.Now(), Changed: clk.Now()}

			l, created, err := st.RegisterLayout(ctx, "q", 4)
			if err != nil || !created {
				t.Fatalf("first registration: created %v, err %v", created, err)
			}
			if d := cmp.Diff(want, l); d != "" {
				t.Errorf("registered layout (-want +got):\n%s", d)
			}
			clk.Advance(time.Second)
			for _, n := range []int{4, 2} { // a re-send; another process's count
				l, created, err = st.RegisterLayout(ctx, "q", n)
				if err != nil || created {
					t.Fatalf("registering again with %d: created %v, err %v", n, created, err)
				}
				if d := cmp.Diff(want, l); d != "" {
					t.Errorf("registering again with %d (-want +got):\n%s", n, d)
				}
			}

			// a resize records only while its token holds the queue's lock
			if ok, err := st.LockResize(ctx, "q", "t1", false); err != nil || !ok {
				t.Fatalf("lock: %v, %v", ok, err)
			}
			if ok, err := st.LockResize(ctx, "q", "t2", false); err != nil || ok {
				t.Fatalf("a second token took the lock: %v, %v", ok, err)
			}
			if _, done, err := st.ResizeLayout(ctx, "q", 1, 2, "t2"); !errors.Is(err, store.ErrResizeUnlocked) || done {
				t.Fatalf("resize without the lock: done %v, err %v", done, err)
			}
			resized := store.Layout{Queue: "q", Partitions: 2, Version: 2, Registered: want.Registered, Changed: clk.Now()}
			for i := range 2 { // the second is a re-send of the first
				l, done, err := st.ResizeLayout(ctx, "q", 1, 2, "t1")
				if err != nil || !done {
					t.Fatalf("resize #%d: done %v, err %v", i+1, done, err)
				}
				if d := cmp.Diff(resized, l); d != "" {
					t.Errorf("resize #%d (-want +got):\n%s", i+1, d)
				}
			}
			l, done, err := st.ResizeLayout(ctx, "q", 1, 8, "t1") // read version 1, but it is 2 now
			if err != nil || done {
				t.Fatalf("stale resize: done %v, err %v", done, err)
			}
			if d := cmp.Diff(resized, l); d != "" {
				t.Errorf("stale resize answered (-want +got):\n%s", d)
			}
			if _, _, err := st.ResizeLayout(ctx, "nosuch", 1, 2, "t1"); !errors.Is(err, sluicetype.ErrQueueNotFound) {
				t.Errorf("resizing an unknown queue: %v, want ErrQueueNotFound", err)
			}

			if _, _, err := st.RegisterLayout(ctx, "a", 1); err != nil {
				t.Fatal(err)
			}
			all, err := st.ListLayouts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, l := range all {
				names = append(names, l.Queue+":"+strconv.Itoa(l.Partitions))
			}
			if w := []string{"a:1", "q:2"}; !slices.Equal(names, w) {
				t.Errorf("ListLayouts = %v, want %v", names, w)
			}
			got, err := st.ReadLayouts(ctx, []string{"q", "nosuch"})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(map[string]store.Layout{"q": resized}, got); d != "" {
				t.Errorf("ReadLayouts (-want +got):\n%s", d)
			}
			if _, err := st.ReadLayout(ctx, "nosuch"); !errors.Is(err, sluicetype.ErrQueueNotFound) {
				t.Errorf("ReadLayout of an unknown queue: %v, want ErrQueueNotFound", err)
			}

			if err := st.AddNamespace(ctx); err != nil {
				t.Fatal(err)
			}
			nss, err := store.Namespaces(ctx, b.rdb)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(nss, ns) {
				t.Errorf("Namespaces = %v, want it to hold %s", nss, ns)
			}
		})
	}
}

// TestLayoutMalformed: a registry value that is not a layout is
// ErrMalformed for every reader, and neither a registration nor a resize
// overwrites it.
func TestLayoutMalformed(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			ns := redistest.NewNamespace(t)
			st := store.New(b.rdb, store.Config{NS: ns})
			if err := b.rdb.HSet(ctx, keys.Queues(ns), "q", "four").Err(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := st.RegisterLayout(ctx, "q", 1); !errors.Is(err, store.ErrMalformed) {
				t.Errorf("RegisterLayout: %v, want ErrMalformed", err)
			}
			if _, _, err := st.ResizeLayout(ctx, "q", 1, 2, "t"); !errors.Is(err, store.ErrMalformed) {
				t.Errorf("ResizeLayout: %v, want ErrMalformed", err)
			}
			if _, err := st.ReadLayout(ctx, "q"); !errors.Is(err, store.ErrMalformed) {
				t.Errorf("ReadLayout: %v, want ErrMalformed", err)
			}
			if v := b.rdb.HGet(ctx, keys.Queues(ns), "q").Val(); v != "four" {
				t.Errorf("the value became %q", v)
			}
		})
	}
}

// TestLayoutsCache: a process's view registers a queue with its
// configured count (else 1) on first use, then answers without Redis; a
// configured count other than the registry's is a LayoutMismatchError
// naming both.
func TestLayoutsCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := env.Server.Client()
	defer rdb.Close()
	ns := redistest.NewNamespace(t)
	st := store.New(rdb, store.Config{NS: ns})
	first := store.NewLayouts(st, map[string]int{"wide": 4})
	if l, err := first.Use(ctx, "wide"); err != nil || l.Partitions != 4 {
		t.Fatalf("first use of wide: %+v, %v", l, err)
	}
	if l, err := first.Use(ctx, "plain"); err != nil || l.Partitions != 1 {
		t.Fatalf("first use of plain: %+v, %v", l, err)
	}
	other := store.NewLayouts(st, nil)
	if l, err := other.Use(ctx, "wide"); err != nil || l.Partitions != 4 {
		t.Fatalf("an unconfigured process's use of wide: %+v, %v", l, err)
	}
	// cached: the registry's change is not seen (a resize is seen at restart)
	if err := rdb.HDel(ctx, keys.Queues(ns), "wide").Err(); err != nil {
		t.Fatal(err)
	}
	if l, err := other.Use(ctx, "wide"); err != nil || l.Partitions != 4 {
		t.Errorf("cached use of wide: %+v, %v", l, err)
	}
	if _, err := other.Lookup(ctx, "wide"); !errors.Is(err, sluicetype.ErrQueueNotFound) {
		t.Errorf("Lookup reads the registry: %v, want ErrQueueNotFound", err)
	}
	mismatched := store.NewLayouts(st, map[string]int{"plain": 2})
	_, err := mismatched.Use(ctx, "plain")
	var me *sluicetype.LayoutMismatchError
	if !errors.Is(err, sluicetype.ErrLayoutMismatch) || !errors.As(err, &me) {
		t.Fatalf("a mismatched use: %v, want a LayoutMismatchError", err)
	}
	if w := (sluicetype.LayoutMismatchError{Namespace: ns, Queue: "plain", Configured: 2, Recorded: 1}); *me != w {
		t.Errorf("mismatch %+v, want %+v", *me, w)
	}
	nss, err := store.Namespaces(ctx, rdb)
	if err != nil || !slices.Contains(nss, ns) {
		t.Errorf("Namespaces = %v, %v: want the namespace recorded by its first use", nss, err)
	}
	fixed := store.FixedLayouts(st, map[string]int{"wide": 4})
	if _, err := fixed.Use(ctx, "other"); !errors.Is(err, sluicetype.ErrQueueNotFound) {
		t.Errorf("a fixed view's unknown queue: %v, want ErrQueueNotFound", err)
	}
}

// FuzzDecodeLayout: any registry value decodes to a valid layout or to
// ErrMalformed, never a panic; a valid one encodes back to itself.
func FuzzDecodeLayout(f *testing.F) {
	for _, s := range []string{"4:1:1700000000000:1700000000000", "0:1:0:0", "1025:1:0:0", "4:1:0", "", "a:b:c:d", "04:1:0:0", "4:-1:0:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		l, err := store.DecodeLayout("q", v)
		if err != nil {
			if !errors.Is(err, store.ErrMalformed) {
				t.Fatalf("%q: %v, want ErrMalformed", v, err)
			}
			return
		}
		if l.Partitions < 1 || l.Partitions > store.MaxPartitions || l.Version < 1 {
			t.Fatalf("%q decoded to %+v", v, l)
		}
		back := strconv.Itoa(l.Partitions) + ":" + strconv.FormatInt(l.Version, 10) + ":" +
			strconv.FormatInt(l.Registered.UnixMilli(), 10) + ":" + strconv.FormatInt(l.Changed.UnixMilli(), 10)
		if back != v {
			t.Fatalf("%q decoded to %+v, which reads %q", v, l, back)
		}
	})
}

// TestRetiredPartition: a partition a shrink retired refuses every job of
// an enqueue (ErrRetired, which is ErrLayoutMismatch), adding nothing and
// counting nothing, claims nothing, and a pause brings it back (then a
// resume lets its jobs run). On miniredis, a real Redis and a cluster.
func TestRetiredPartition(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "before"})
			testkit.Must(t, f.st.Retire(f.ctx, f.p))
			_, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "x", Kind: "k", Payload: []byte("p"), MaxAttempts: 3},
				{Local: "y", Kind: "k", Payload: []byte("p"), MaxAttempts: 3}})
			if !errors.Is(err, store.ErrRetired) || !errors.Is(err, sluicetype.ErrLayoutMismatch) {
				t.Fatalf("enqueue to a retired partition: %v, want ErrRetired (ErrLayoutMismatch)", err)
			}
			for _, l := range []string{"x", "y"} {
				if n := f.rdb.Exists(f.ctx, f.p.Job(l)).Val(); n != 0 {
					t.Errorf("job %s was written", l)
				}
			}
			if d := cmp.Diff(map[string]int64{"available": 1}, f.stats()); d != "" {
				t.Errorf("stats after the refused enqueue (-want +got):\n%s", d)
			}
			if res := f.claim(10, "w"); len(res.Jobs) != 0 {
				t.Errorf("a retired partition leased %d jobs", len(res.Jobs))
			}
			// pausing and resuming leave it retired: a shrink under way
			// may still record a layout without it
			for _, paused := range []bool{true, false} {
				if _, err := f.st.SetPaused(f.ctx, f.p, paused); !errors.Is(err, store.ErrRetired) {
					t.Fatalf("SetPaused(%v) of a retired partition: %v, want ErrRetired", paused, err)
				}
				if res := f.claim(10, "w"); len(res.Jobs) != 0 {
					t.Fatalf("after SetPaused(%v), the retired partition leased %d jobs", paused, len(res.Jobs))
				}
			}
			if err := f.st.TakeBack(f.ctx, f.p); err != nil { // a refused shrink, or a growth
				t.Fatal(err)
			}
			if _, err := f.st.SetPaused(f.ctx, f.p, false); err != nil {
				t.Fatal(err)
			}
			f.enqueue(store.NewJob{Local: "after"})
			if res := f.claim(10, "w"); len(res.Jobs) != 2 {
				t.Errorf("after the partition came back: leased %d jobs, want 2", len(res.Jobs))
			}
		})
	}
}
