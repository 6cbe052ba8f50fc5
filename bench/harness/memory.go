package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
)

// Pending is the memory scenario's job: it carries Data, a fixed payload,
// and never runs.
type Pending struct {
	Data []byte
}

// Kind names the job type.
func (Pending) Kind() string { return "bench.pending" }

// memoryBudget is the requirement: Redis memory per pending job, beyond its
// payload.
const memoryBudget = 200

// memoryDelay is how far in the future the memory scenario's jobs are due:
// they stay pending for the whole measurement.
const memoryDelay = 24 * time.Hour

// memoryResult is the memory scenario's report.
type memoryResult struct {
	Jobs int `json:"jobs"`
	// PayloadBytes is the length of one job's encoded arguments (msgpack),
	// the payload Redis stores.
	PayloadBytes int `json:"payload_bytes"`
	// Redis used_memory (INFO memory, summed over the nodes) before the
	// jobs were enqueued, once they were all pending, and after they were
	// deleted.
	BaselineBytes int64 `json:"baseline_bytes"`
	PendingBytes  int64 `json:"pending_bytes"`
	DeletedBytes  int64 `json:"deleted_bytes"`
	// BytesPerJob is (PendingBytes - BaselineBytes) / Jobs, and
	// OverheadPerJob that less PayloadBytes: what Sluice adds to a job.
	BytesPerJob    float64 `json:"bytes_per_job"`
	OverheadPerJob float64 `json:"overhead_bytes_per_job"`
	// JobHashBytes is MEMORY USAGE of one pending job's hash: the part of
	// BytesPerJob spent on the hash, the rest on index entries (the
	// scheduled zset) and Redis's key table.
	JobHashBytes int64 `json:"job_hash_bytes"`
	// Budget is the requirement for OverheadPerJob; Pass says if it holds.
	Budget int  `json:"budget_bytes"`
	Pass   bool `json:"pass"`
}

// runMemory enqueues cfg.Pending delayed jobs (due in a day, so none runs
// and no worker is needed), measures what they cost Redis in memory, then
// deletes them.
func runMemory(ctx context.Context, t *target, cfg config) (res *memoryResult, err error) {
	args := Pending{Data: bytes.Repeat([]byte{'x'}, cfg.Payload)}
	payload, err := msgpack.Marshal(args)
	if err != nil {
		return nil, err
	}
	t.progress("memory: %d pending jobs of %d payload bytes", cfg.Pending, len(payload))
	ns := newNamespace("memory")
	// Whatever happens, the jobs go: a day-long delay would keep them.
	defer func() { err = errors.Join(err, t.deleteNamespace(context.WithoutCancel(ctx), ns)) }()
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(context.Context, *flow.Job[Pending]) error {
		return errors.New("a pending job of the memory scenario ran")
	}); err != nil {
		return nil, err
	}
	client, err := flow.NewClient(t.producer, t.clientOptions(ns, reg))
	if err != nil {
		return nil, err
	}
	res = &memoryResult{Jobs: cfg.Pending, PayloadBytes: len(payload), Budget: memoryBudget}
	if res.BaselineBytes, err = t.usedMemory(ctx); err != nil {
		return nil, err
	}
	delay := []flow.EnqueueOption{flow.WithDelay(memoryDelay)}
	if _, err := produce(ctx, client, cfg, cfg.Pending, args, func(int) []flow.EnqueueOption { return delay }); err != nil {
		return nil, err
	}
	if res.PendingBytes, err = t.usedMemory(ctx); err != nil {
		return nil, err
	}
	if res.JobHashBytes, err = jobHashBytes(ctx, t, client, ns, args); err != nil {
		return nil, err
	}
	if err := t.deleteNamespace(ctx, ns); err != nil {
		return nil, fmt.Errorf("deleting the jobs: %w", err)
	}
	if res.DeletedBytes, err = t.usedMemory(ctx); err != nil {
		return nil, err
	}
	res.BytesPerJob = float64(res.PendingBytes-res.BaselineBytes) / float64(cfg.Pending)
	res.OverheadPerJob = res.BytesPerJob - float64(res.PayloadBytes)
	res.Pass = res.OverheadPerJob <= memoryBudget
	return res, nil
}

// jobHashBytes enqueues one more job like the others and reads the
// MEMORY USAGE of its hash.
func jobHashBytes(ctx context.Context, t *target, client *flow.Client, ns string, args Pending) (int64, error) {
	job, err := client.Enqueue(ctx, args, flow.WithDelay(memoryDelay))
	if err != nil {
		return 0, err
	}
	ref, ok := keys.ParseRef(ns, job.ID)
	if !ok {
		return 0, fmt.Errorf("unexpected job ID %q", job.ID)
	}
	return t.admin.MemoryUsage(ctx, ref.Job(ref.Local), 0).Result()
}

func (m *memoryResult) writeTable(w io.Writer) {
	verdict := "within"
	if !m.Pass {
		verdict = "over"
	}
	fmt.Fprintf(w, "Memory: %s pending (delayed) jobs, %d payload bytes each; Redis used_memory (INFO memory)\n",
		Thousands(float64(m.Jobs)), m.PayloadBytes)
	fmt.Fprintf(w, "  baseline %s, %s with the jobs pending, %s once they were deleted\n",
		mib(m.BaselineBytes), mib(m.PendingBytes), mib(m.DeletedBytes))
	fmt.Fprintf(w, "  %.1f bytes per pending job, %.1f beyond its payload: %s the %d-byte budget; MEMORY USAGE of one job hash %d bytes\n",
		m.BytesPerJob, m.OverheadPerJob, verdict, m.Budget, m.JobHashBytes)
}

// mib formats a byte count in MiB.
func mib(n int64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }
