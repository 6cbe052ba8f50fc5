package main

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// A path runs one job path's batches on a fresh namespace (ns): an
// enqueue of the given IDs, a claim of up to n jobs, an ack of leases as
// completions.
type path interface {
	name() string
	open(rdb *redis.Client, ns string) session
}

type session interface {
	enqueue(ctx context.Context, ids []string) error
	claim(ctx context.Context, n int) ([]store.Lease, error)
	complete(ctx context.Context, leases []store.Lease) error
}

const (
	kind       = "bench.noop"
	leaseFor   = 30 * time.Second
	workerName = "model-worker"
)

// payload is what Sluice's producer writes for a no-op job's arguments;
// definition is a job's kind and payload as model2 and model3 keep them,
// packed.
var (
	payload    = []byte{0x80}
	definition = mustPack(map[string]any{"k": kind, "p": payload})
)

func mustPack(v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// sluicePath runs Sluice's own scripts through its store, with completed
// jobs deleted at once (a worker's DiscardCompleted).
type sluicePath struct{}

func (sluicePath) name() string { return "sluice" }

func (sluicePath) open(rdb *redis.Client, ns string) session {
	st := store.New(rdb, store.Config{NS: ns, RetainCompleted: -1, RetainArchived: time.Hour,
		RetainCancelled: time.Hour, CrashLimit: 3})
	return &sluiceSession{st: st, p: st.Partition("q", 0)}
}

type sluiceSession struct {
	st     *store.Store
	p      keys.Partition
	claims atomic.Int64
	// started is each lease's start in store time, by lease ID: a worker
	// acks a completion with it (store.Ack.Started)
	started sync.Map
}

func (s *sluiceSession) enqueue(ctx context.Context, ids []string) error {
	jobs := make([]store.NewJob, len(ids))
	for i, id := range ids {
		jobs[i] = store.NewJob{Local: id, Generated: true, Kind: kind, Payload: payload, MaxAttempts: store.DefaultMaxAttempts}
	}
	res, err := s.st.Enqueue(ctx, s.p, jobs)
	if err != nil {
		return err
	}
	for i, r := range res {
		if r.Err != nil {
			return fmt.Errorf("job %s: %w", ids[i], r.Err)
		}
	}
	return nil
}

func (s *sluiceSession) claim(ctx context.Context, n int) ([]store.Lease, error) {
	nonce := "n" + strconv.FormatInt(s.claims.Add(1), 36)
	res, err := s.st.Claim(ctx, s.p, store.ClaimRequest{N: n, Lease: leaseFor, Worker: workerName, Nonce: nonce})
	if err != nil {
		return nil, err
	}
	out := make([]store.Lease, len(res.Jobs))
	for i, j := range res.Jobs {
		out[i] = store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}
		s.started.Store(j.LeaseID, j.LeaseExpiry.Add(-leaseFor))
	}
	return out, nil
}

func (s *sluiceSession) complete(ctx context.Context, leases []store.Lease) error {
	acks := make([]store.Ack, len(leases))
	for i, l := range leases {
		acks[i] = store.Ack{Lease: l, Code: store.CodeOK}
		if t, ok := s.started.LoadAndDelete(l.LeaseID); ok {
			acks[i].Started = t.(time.Time)
		}
	}
	res, _, err := s.st.Ack(ctx, s.p, acks)
	if err != nil {
		return err
	}
	return allCompleted(leases, func(i int) string { return res[i].State })
}

func allCompleted(leases []store.Lease, state func(int) string) error {
	for i, l := range leases {
		if s := state(i); s != "completed" {
			return fmt.Errorf("ack of job %s answered %q", l.Local, s)
		}
	}
	return nil
}

//go:embed model.lua
var modelLib string

func loadModel(ctx context.Context, rdb *redis.Client) error {
	if err := rdb.FunctionLoadReplace(ctx, modelLib).Err(); err != nil {
		return fmt.Errorf("loading model.lua: %w", err)
	}
	return nil
}

// modelPath runs model.lua: its first step (fn "model"), its second
// ("model2") or its third ("model3").
type modelPath struct{ fn string }

func (m modelPath) name() string { return m.fn }

func (m modelPath) open(rdb *redis.Client, ns string) session {
	tag := "{" + ns + ":q:0}"
	return &modelSession{rdb: rdb, fn: m.fn, pfx: tag + ":",
		keys: []string{tag + ":ready", tag + ":run", tag + ":lz", tag + ":stats", tag + ":idle", tag + ":fz", tag + ":defs"}}
}

type modelSession struct {
	rdb    *redis.Client
	fn     string
	pfx    string
	keys   []string
	calls  atomic.Int64
	claims atomic.Int64
}

// call runs fn with the arguments every function takes first, and a fresh
// call ID.
func (s *modelSession) call(ctx context.Context, fn string, args ...any) *redis.Cmd {
	head := []any{s.pfx, "c" + strconv.FormatInt(s.calls.Add(1), 36), s.pfx + "wake", "0"}
	return s.rdb.FCall(ctx, fn, s.keys, append(head, args...)...)
}

func (s *modelSession) enqueue(ctx context.Context, ids []string) error {
	args := make([]any, 0, 1+3*len(ids))
	args = append(args, len(ids))
	for _, id := range ids {
		if s.fn != "model" {
			args = append(args, id, definition)
		} else {
			args = append(args, id, kind, payload)
		}
	}
	v, err := s.call(ctx, s.fn+"_enqueue", args...).Int64Slice()
	if err != nil {
		return err
	}
	for i, added := range v {
		if added != 1 {
			return fmt.Errorf("job %s not added", ids[i])
		}
	}
	return nil
}

func (s *modelSession) claim(ctx context.Context, n int) ([]store.Lease, error) {
	nonce := "n" + strconv.FormatInt(s.claims.Add(1), 36)
	v, err := s.call(ctx, s.fn+"_claim", n, ms(leaseFor), workerName, nonce).Slice()
	if err != nil {
		return nil, err
	}
	return s.parseClaim(v)
}

// parseClaim reads model.lua's claim reply: per job id, lease ID, expiry,
// fence, then 2f and f values (model), or the definition (model2,
// model3).
func (s *modelSession) parseClaim(v []any) ([]store.Lease, error) {
	var out []store.Lease
	for o := 0; o < len(v); {
		if o+5 > len(v) {
			return nil, fmt.Errorf("claim reply cut short at %d of %d", o, len(v))
		}
		id, _ := v[o].(string)
		lease, _ := v[o+1].(string)
		fence, _ := v[o+3].(int64)
		out = append(out, store.Lease{Local: id, LeaseID: lease, Fence: fence})
		o += 5
		if s.fn == "model" {
			m, _ := v[o-1].(int64)
			o += int(m)
		}
	}
	return out, nil
}

func (s *modelSession) complete(ctx context.Context, leases []store.Lease) error {
	args := make([]any, 0, 1+3*len(leases))
	args = append(args, len(leases))
	for _, l := range leases {
		args = append(args, l.Local, l.LeaseID, l.Fence)
	}
	v, err := s.call(ctx, s.fn+"_ack", args...).StringSlice()
	if err != nil {
		return err
	}
	return allCompleted(leases, func(i int) string { return v[i] })
}

func ms(d time.Duration) int64 { return d.Milliseconds() }
