package runtime

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// failTime fails the first TIME command sent through it.
type failTime struct{ failed bool }

func (h *failTime) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failTime) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *failTime) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "time" || h.failed {
			return next(ctx, cmd)
		}
		h.failed = true
		cmd.SetErr(errCut)
		return errCut
	}
}

// TestRetentionStartWhenStoreTimeFailedAtRun: a worker on the wall clock
// that cannot read the store's time at Run writes no record then; its
// retry, an hour later by its own clock, records as its start the
// store's time less that hour, not the time of the retry (which would
// pass it for newer than a worker that started in between) nor its own
// clock's reading (which may be off the store's).
func TestRetentionStartWhenStoreTimeFailedAtRun(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t)
	storeNow := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC) // far from the machine's clock
	m.SetTime(storeNow)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	rdb.AddHook(&failTime{})
	w, err := NewWorker(rdb, kindHandlers{}, Options{Namespace: "t", WorkerID: "w",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	w.served = map[string]*servedQueue{"q": {}}
	w.recordRetention(ctx)
	if !w.retentionOwed || m.Exists(keys.Retention("t")) {
		t.Fatalf("Run's write with the store's time unread: owed %v, key written %v", w.retentionOwed, m.Exists(keys.Retention("t")))
	}
	w.retentionFrom = w.retentionFrom.Add(-time.Hour) // an hour goes by on the worker's clock
	w.retryRetention(ctx)
	v, err := rdb.HGet(ctx, keys.Retention("t"), "q").Result()
	if err != nil {
		t.Fatal(err)
	}
	r, err := store.DecodeRetention("q", v)
	if err != nil {
		t.Fatal(err)
	}
	want := storeNow.Add(-time.Hour)
	if w.retentionOwed || r.Started.After(want) || r.Started.Before(want.Add(-5*time.Second)) {
		t.Errorf("after the retry: owed %v, started %s; want %s (the store's time less the hour gone)", w.retentionOwed, r.Started, want)
	}
}
