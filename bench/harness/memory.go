package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
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

// memoryDelay is how far in the future the memory scenario's delayed jobs
// are due: they stay pending for the whole measurement.
const memoryDelay = 24 * time.Hour

// memoryResult is the memory scenario's report: what pending jobs cost
// Redis, once as jobs ready to run (in a ready list; no worker runs) and
// once as delayed jobs (in the scheduled zset).
type memoryResult struct {
	Jobs int `json:"jobs"`
	// PayloadBytes is the length of one job's encoded arguments (msgpack),
	// the payload Redis stores.
	PayloadBytes int         `json:"payload_bytes"`
	Ready        memoryState `json:"ready"`
	Delayed      memoryState `json:"delayed"`
	// Plain is the same payloads held as plain string values, measured
	// after the jobs, and ReadyBeyondPlain what a job ready to run costs
	// beyond its plain value: Sluice's own share.
	Plain            plainValues `json:"plain"`
	ReadyBeyondPlain float64     `json:"ready_beyond_plain_bytes"`
	// Budget is the requirement for Ready.OverheadPerJob; Pass says if it
	// holds.
	Budget int  `json:"budget_bytes"`
	Pass   bool `json:"pass"`
}

// memoryState is what Jobs pending jobs of one kind cost.
type memoryState struct {
	// Redis used_memory less client buffers (usedMemory) before the
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
	// BytesPerJob spent on the hash, the rest on its index entry (ready
	// list or scheduled zset) and Redis's key table.
	JobHashBytes int64 `json:"job_hash_bytes"`
}

// runMemory measures cfg.Pending jobs ready to run, then as many delayed
// jobs; no worker runs, and the jobs are deleted after each measurement.
func runMemory(ctx context.Context, t *target, cfg config) (*memoryResult, error) {
	args := Pending{Data: bytes.Repeat([]byte{'x'}, cfg.Payload)}
	payload, err := msgpack.Marshal(args)
	if err != nil {
		return nil, err
	}
	res := &memoryResult{Jobs: cfg.Pending, PayloadBytes: len(payload), Budget: memoryBudget}
	for _, m := range []struct {
		what  string
		state *memoryState
		opts  []flow.EnqueueOption
	}{
		{"ready", &res.Ready, nil},
		{"delayed", &res.Delayed, []flow.EnqueueOption{flow.WithDelay(memoryDelay)}},
	} {
		t.progress("memory: %d %s jobs of %d payload bytes", cfg.Pending, m.what, len(payload))
		if err := measurePending(ctx, t, cfg, args, m.opts, m.state); err != nil {
			return res, fmt.Errorf("%s jobs: %w", m.what, err)
		}
		m.state.OverheadPerJob = m.state.BytesPerJob - float64(res.PayloadBytes)
	}
	t.progress("memory: %d plain values of %d bytes", cfg.Pending, len(payload))
	if res.Plain, err = measurePlain(ctx, t, cfg, payload); err != nil {
		return res, err
	}
	res.ReadyBeyondPlain = res.Ready.BytesPerJob - res.Plain.BytesPerValue
	res.Pass = res.Ready.OverheadPerJob <= memoryBudget
	return res, nil
}

// measurePending enqueues cfg.Pending jobs with opts in a fresh namespace
// as long as the default one ("sluice"), so that key names are as long
// as a user's, and measures them into st.
func measurePending(ctx context.Context, t *target, cfg config, args Pending, opts []flow.EnqueueOption, st *memoryState) (err error) {
	ns := sixCharNamespace("m")
	// Whatever happens, the jobs go: a day-long delay would keep them.
	defer func() { err = errors.Join(err, t.deleteNamespace(context.WithoutCancel(ctx), ns)) }()
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(context.Context, *flow.Job[Pending]) error {
		return errors.New("a pending job of the memory scenario ran")
	}); err != nil {
		return err
	}
	client, err := flow.NewClient(t.producer.UniversalClient, t.clientOptions(ns, reg))
	if err != nil {
		return err
	}
	if st.BaselineBytes, err = t.settledMemory(ctx); err != nil {
		return err
	}
	if _, err := produce(ctx, client, cfg, cfg.Pending, args, func(int) []flow.EnqueueOption { return opts }); err != nil {
		return err
	}
	if st.PendingBytes, err = t.settledMemory(ctx); err != nil {
		return err
	}
	if st.JobHashBytes, err = jobHashBytes(ctx, t, client, ns, args, opts); err != nil {
		return err
	}
	if err := t.deleteNamespace(ctx, ns); err != nil {
		return fmt.Errorf("deleting the jobs: %w", err)
	}
	if st.DeletedBytes, err = t.settledMemory(ctx); err != nil {
		return err
	}
	st.BytesPerJob = float64(st.PendingBytes-st.BaselineBytes) / float64(cfg.Pending)
	return nil
}

// jobHashBytes enqueues one more job like the others and reads the
// MEMORY USAGE of its hash.
func jobHashBytes(ctx context.Context, t *target, client *flow.Client, ns string, args Pending, opts []flow.EnqueueOption) (int64, error) {
	job, err := client.Enqueue(ctx, args, opts...)
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
	fmt.Fprintf(w, "Memory: %s pending jobs, %d payload bytes each; Redis used_memory less client buffers (INFO memory)\n",
		Thousands(float64(m.Jobs)), m.PayloadBytes)
	for _, s := range []struct {
		what string
		st   memoryState
	}{{"ready to run", m.Ready}, {"delayed", m.Delayed}} {
		fmt.Fprintf(w, "  %-12s %.1f bytes per job, %.1f beyond its payload (job hash %d bytes); baseline %s, pending %s, deleted %s\n",
			s.what, s.st.BytesPerJob, s.st.OverheadPerJob, s.st.JobHashBytes, mib(s.st.BaselineBytes), mib(s.st.PendingBytes), mib(s.st.DeletedBytes))
	}
	fmt.Fprintf(w, "  plain value  %.1f bytes per value, %.1f beyond its payload: the payload alone, SET under a key as long as a job's\n",
		m.Plain.BytesPerValue, m.Plain.OverheadPerValue)
	fmt.Fprintf(w, "  jobs ready to run: %s the %d-byte budget beyond the payload; %.1f bytes beyond the plain value\n",
		verdict, m.Budget, m.ReadyBeyondPlain)
}

// mib formats a byte count in MiB.
func mib(n int64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

// sixCharNamespace is a fresh namespace starting with letter, as long as
// the default one ("sluice"), so that the keys measured are as long as a
// user's.
func sixCharNamespace(letter string) string {
	ns := letter + strconv.FormatInt(time.Now().UnixNano()%(36*36*36*36*36), 36)
	return ns + strings.Repeat("0", 6-len(ns))
}
