package runtime

import (
	"context"
	"os"
	"slices"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// heartbeatTTL is how many longest leases a worker counts as alive in the
// registry without a heartbeat.
const heartbeatTTL = 3

// registry keeps this worker's entry in the namespace's registry of live
// workers (admin.Client.Workers): refreshed on every renewal round with the
// jobs it runs (beside the round's renewals, never before them: a registry
// that hangs delays no renewal; renew.go), removed when it stops.
type registry struct {
	w       *Worker
	host    string
	started time.Time
}

// register makes the worker's registry entry; the renewal loop's first
// round writes it.
func (w *Worker) register() *registry {
	host, _ := os.Hostname()
	return &registry{w: w, host: host, started: w.clk.Now()}
}

// beat writes one heartbeat; a failure is logged, the next tick retries.
func (r *registry) beat(ctx context.Context) {
	w := r.w
	queues := make(map[string]int, len(w.served))
	versions := make(map[string]int64, len(w.served))
	for q, sq := range w.served {
		if !sq.stale.Load() { // resized: it claims from the queue no more (checkLayouts)
			queues[q] = sq.layout.Partitions
			versions[q] = sq.layout.Version
		}
	}
	var jobs []string
	w.mu.Lock()
	for a := range w.inflight {
		if !a.settled.Load() {
			jobs = append(jobs, a.ID)
		}
	}
	w.mu.Unlock()
	slices.Sort(jobs)
	info := sluicetype.WorkerInfo{
		ID: w.opts.WorkerID, Host: r.host, PID: os.Getpid(), Started: r.started,
		Queues: queues, QueueVersions: versions, Concurrency: w.opts.Concurrency, Jobs: jobs,
	}
	if err := w.st.Heartbeat(ctx, info, heartbeatTTL*w.longestLease); err != nil && ctx.Err() == nil {
		w.log.Warn("worker heartbeat failed", "err", err)
	}
}

// unregister removes the worker from the registry as it stops, within
// what the final relay left of their bound (Worker.tailEnd).
func (r *registry) unregister(ctx context.Context) {
	end := time.Now().Add(finalRelayTimeout)
	if t := r.w.tailEnd.Load(); t != 0 {
		end = time.Unix(0, t)
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), end)
	defer cancel()
	self := sluicetype.WorkerInfo{ID: r.w.opts.WorkerID, Host: r.host, PID: os.Getpid(), Started: r.started}
	if err := r.w.st.Unregister(ctx, self); err != nil {
		r.w.log.Warn("leaving the worker registry failed", "err", err)
	}
}
