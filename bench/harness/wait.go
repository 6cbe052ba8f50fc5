package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// WaitProbe is the wait scenario's job: its handler (worker mode) blocks
// until the benchmark lets it return.
type WaitProbe struct{ I int }

// Kind names the job type.
func (WaitProbe) Kind() string { return "bench.wait" }

// waitResult is the wait scenario's report: Client.Wait on a job that is
// already running, the job finishing once the Wait has marked it.
type waitResult struct {
	// Samples per mode: one job at a time.
	Samples int `json:"samples"`
	// AfterAck is from the return of the ack script's call (the
	// benchmark acks the job itself through the store, as a worker's ack
	// batch would) to the return of Wait: the announcement, and Wait's
	// read of the job.
	AfterAck Distribution `json:"after_ack"`
	// AfterAckSent is the same from just before the ack call was sent:
	// AfterAck plus the ack's round trip.
	AfterAckSent Distribution `json:"after_ack_sent"`
	// AfterHandler is, with a real worker, from the return of the handler
	// to the return of Wait: the worker's ack path (its ack batching)
	// included.
	AfterHandler Distribution `json:"after_handler"`
	// FinishedCall is how long Wait takes on a job that has finished.
	FinishedCall Distribution `json:"finished_call"`
}

func (r *waitResult) writeTable(w io.Writer) {
	fmt.Fprintf(w, "Wait: Client.Wait on a running job, %d samples per mode, one at a time (another Wait keeps the subscriber up)\n", r.Samples)
	fmt.Fprintf(w, "  completion seen after the ack's reply:      %s\n", r.AfterAck)
	fmt.Fprintf(w, "  completion seen after the ack was sent:     %s\n", r.AfterAckSent)
	fmt.Fprintf(w, "  completion seen after the handler returned: %s (a worker's ack path included)\n", r.AfterHandler)
	fmt.Fprintf(w, "  Wait on a finished job:                     %s\n", r.FinishedCall)
}

// String is the distribution on one line.
func (d Distribution) String() string {
	return fmt.Sprintf("p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms", d.P50, d.P90, d.P99, d.Max)
}

// runWait measures how soon Client.Wait learns that a running job
// finished. All jobs are in one partition, where a scheduled job that
// never runs is waited on throughout, as a client with Wait calls in
// progress would keep its subscriber. Ack mode: the benchmark claims each
// job and acks it through the store. Worker mode: a worker runs it, and
// its handler returns when the Wait has marked it.
func runWait(ctx context.Context, t *target, cfg config) (res *waitResult, err error) {
	n := max(int(cfg.Duration.Seconds()*float64(cfg.Rate))/2, 100)
	t.progress("wait: %d samples per mode", n)
	ns := newNamespace("wait")
	defer func() { err = errors.Join(err, t.cleanup(context.WithoutCancel(ctx), ns)) }()

	reg := flow.NewRegistry()
	started := make(chan string, 1)
	release := make(chan struct{})
	returned := make(chan time.Time, 1)
	if err := flow.Register(reg, func(_ context.Context, job *flow.Job[WaitProbe]) error {
		started <- job.ID
		<-release
		returned <- time.Now()
		return nil
	}); err != nil {
		return nil, err
	}
	client, err := flow.NewClient(t.producer.UniversalClient, t.clientOptions(ns, reg))
	if err != nil {
		return nil, err
	}
	here := flow.WithPartitionKey("wait")
	anchor, err := client.Enqueue(ctx, WaitProbe{I: -1}, here, flow.WithDelay(24*time.Hour))
	if err != nil {
		return nil, err
	}
	actx, stopAnchor := context.WithCancel(ctx)
	anchored := make(chan error, 1)
	go func() {
		_, err := client.Wait(actx, anchor.ID)
		anchored <- err
	}()
	defer func() {
		stopAnchor()
		if e := <-anchored; !errors.Is(e, context.Canceled) {
			err = errors.Join(err, fmt.Errorf("the anchor's Wait: %w", e))
		}
	}()
	ref, _ := keys.ParseRef(ns, anchor.ID)
	if err := awaitWatch(ctx, t, ref); err != nil {
		return nil, err
	}
	if err := pollUntil(ctx, func() (bool, error) {
		subs, err := t.admin.PubSubNumSub(ctx, ref.DoneChannel()).Result()
		if t.cluster { // the subscriber's node may be another: a publish reaches every node
			return true, err
		}
		return subs[ref.DoneChannel()] > 0, err
	}); err != nil {
		return nil, err
	}

	res = &waitResult{Samples: n}
	st := store.New(t.worker.UniversalClient, store.Config{NS: ns, RetainCompleted: time.Hour, RetainArchived: time.Hour, RetainCancelled: time.Hour, CrashLimit: 3})
	var afterAck, afterSent, finished []time.Duration
	for i := range n {
		job, err := client.Enqueue(ctx, WaitProbe{I: i}, here)
		if err != nil {
			return nil, err
		}
		jref, _ := keys.ParseRef(ns, job.ID)
		claimed, err := st.Claim(ctx, jref.Partition, store.ClaimRequest{N: 1, Lease: time.Minute, Worker: "bench-wait", Nonce: "bench-wait-" + strconv.Itoa(i), PromoteLimit: 1})
		if err != nil {
			return nil, err
		}
		if len(claimed.Jobs) != 1 || claimed.Jobs[0].Local != jref.Local {
			return nil, fmt.Errorf("claimed %d jobs, not %s", len(claimed.Jobs), job.ID)
		}
		done := waitFor(ctx, client, job.ID)
		if err := awaitWatch(ctx, t, jref); err != nil {
			return nil, err
		}
		j := claimed.Jobs[0]
		sent := time.Now()
		out, _, err := st.Ack(ctx, jref.Partition, []store.Ack{{Lease: store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}, Code: store.CodeOK}})
		acked := time.Now()
		if err != nil || out[0].State != flow.StateCompleted {
			return nil, fmt.Errorf("ack: %+v %v", out, err)
		}
		seen, err := (<-done).result()
		if err != nil {
			return nil, err
		}
		afterAck = append(afterAck, max(seen.Sub(acked), 0))
		afterSent = append(afterSent, seen.Sub(sent))
		call := time.Now()
		if _, err := client.Wait(ctx, job.ID); err != nil {
			return nil, err
		}
		finished = append(finished, time.Since(call))
	}
	res.AfterAck, res.AfterAckSent, res.FinishedCall = Summarize(afterAck), Summarize(afterSent), Summarize(finished)

	// A real worker.
	w, err := startWorker(ctx, t, reg, t.workerOptions(ns, cfg.Concurrency, true))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, w.stop()) }()
	var afterHandler []time.Duration
	for i := range n {
		if _, err := client.Enqueue(ctx, WaitProbe{I: i}, here); err != nil {
			return nil, err
		}
		var id string
		select {
		case id = <-started:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		jref, _ := keys.ParseRef(ns, id)
		done := waitFor(ctx, client, id)
		if err := awaitWatch(ctx, t, jref); err != nil {
			close(release)
			return nil, err
		}
		release <- struct{}{}
		ret := <-returned
		seen, err := (<-done).result()
		if err != nil {
			return nil, err
		}
		afterHandler = append(afterHandler, seen.Sub(ret))
	}
	res.AfterHandler = Summarize(afterHandler)
	return res, nil
}

// waitSeen is when a Wait returned, or its error.
type waitSeen struct {
	at  time.Time
	err error
}

func (s waitSeen) result() (time.Time, error) { return s.at, s.err }

// waitFor runs client.Wait(ctx, id) in the background; the channel gets
// the time it returned at.
func waitFor(ctx context.Context, client *flow.Client, id string) <-chan waitSeen {
	ch := make(chan waitSeen, 1)
	go func() {
		info, err := client.Wait(ctx, id)
		at := time.Now()
		if err == nil && info.State != flow.StateCompleted {
			err = fmt.Errorf("job %s ended %s", id, info.State)
		}
		ch <- waitSeen{at, err}
	}()
	return ch
}

// awaitWatch polls until a Wait has marked the job ref.
func awaitWatch(ctx context.Context, t *target, ref keys.Ref) error {
	return pollUntil(ctx, func() (bool, error) {
		return t.admin.HExists(ctx, ref.Job(ref.Local), keys.FieldWatched).Result()
	})
}

// pollUntil calls cond every 20 µs until it holds or fails.
func pollUntil(ctx context.Context, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if err := Sleep(ctx, 20*time.Microsecond); err != nil {
			return err
		}
	}
}
