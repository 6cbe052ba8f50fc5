package chaos

// The workflows of the chaos suite: approval workflows that wait durably
// for a signal (step.WaitSignal, step.Select with a reminder timer and a
// deadline), and sleeping jobs (step.Sleep) between two ledger steps; and
// the checks on them after the drain.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/step"
)

// approvalJob is a workflow: step a1, then a wait for the signal
// signalName carrying a token (the signaller's, signaller_test.go), then
// step a2, whose effect records the token it got (ledger field
// receiptField), and a completion effect. Variant says how it waits:
//   - wfPlain: step.WaitSignal with the timeout Timeout (wfDeadline, which
//     must never fire: the signal comes first);
//   - wfRemind: step.Select "wait1" on the signal, the timer "remind"
//     (Remind) and the timer "deadline" (Timeout); when the reminder fires
//     first, step "remind" (a ledger effect), then step.Select "wait2" on
//     the signal and the same "deadline", which keeps its first wake time;
//   - wfSilent: step.WaitSignal with a short Timeout; it is never
//     signalled, and a2 records timeoutToken.
//
// Ledger jobs ledger job n with n%wfEvery == wfEvery/2 go with workflow
// n/wfEvery, ID "w<k>" (producer.enqueue); approvalFor(k) is its args.
type approvalJob struct {
	K       int
	Variant int
	Remind  time.Duration
	Timeout time.Duration
}

func (approvalJob) Kind() string { return "chaos_approval" }

// The variants of an approval workflow.
const (
	wfPlain = iota
	wfRemind
	wfSilent
)

// wfEvery: the producer adds workflow k alongside ledger job
// wfEvery*k + wfEvery/2.
const wfEvery = 3

// wfDeadline is the timeout of a signalled workflow's wait: far longer
// than any signal takes to arrive, so that its firing means a lost signal.
const wfDeadline = 10 * time.Minute

// signalName is the signal the workflows wait for.
const signalName = "decision"

// timeoutToken is what a2 records when the wait timed out.
const timeoutToken = "timeout"

func workflowID(k int) string { return fmt.Sprintf("w%d", k) }

// approvalFor is workflow k's args: its variant by k, its durations drawn
// from a generator seeded with k, so that an enqueue sent again holds the
// same job.
func approvalFor(k int) approvalJob {
	rng := rand.New(rand.NewPCG(uint64(k), 0xa11))
	a := approvalJob{K: k, Variant: wfPlain, Timeout: wfDeadline}
	switch {
	case k%6 == 5:
		a.Variant, a.Timeout = wfSilent, time.Duration(200+rng.IntN(1301))*time.Millisecond
	case k%3 == 1:
		a.Variant, a.Remind = wfRemind, time.Duration(100+rng.IntN(501))*time.Millisecond
	}
	return a
}

// receipt is the result of an approval workflow's step a2: the token it
// got and when the attempt that ran a2 was claimed (store time, ms).
type receipt struct {
	Token   string `msgpack:"t"`
	Claimed int64  `msgpack:"c"`
}

// wfField names an effect of workflow k: "a1", "remind", "got:<token>" or
// "done".
func wfField(k int, what string) string { return fmt.Sprintf("w%d:%s", k, what) }

func receiptField(k int, token string) string { return wfField(k, "got:"+token) }

// napJob sleeps durably for D (step.Sleep "nap") between the ledger steps
// n1 and n2, then commits a completion effect. n1 records when its attempt
// was claimed, n2 when its attempt was claimed and Redis's TIME as it
// ran (store time, ms): both must be at or past the nap's wake time. The
// producer adds nap job k, ID "z<k>", alongside ledger job
// napEvery*k + napEvery-1; napFor(k) is its args.
type napJob struct {
	K int
	D time.Duration
}

func (napJob) Kind() string { return "chaos_nap" }

const napEvery = 4

func napID(k int) string { return fmt.Sprintf("z%d", k) }

// napFor is nap job k's args: a sleep of 100 ms to 1.5 s, drawn from a
// generator seeded with k.
func napFor(k int) napJob {
	rng := rand.New(rand.NewPCG(uint64(k), 0x2a9))
	return napJob{K: k, D: time.Duration(100+rng.IntN(1401)) * time.Millisecond}
}

// napResume is the result of a nap job's step n2.
type napResume struct {
	Claimed int64 `msgpack:"c"` // the claim of the attempt that ran n2 (ms)
	Now     int64 `msgpack:"n"` // Redis's TIME as n2 ran (ms)
}

func napField(k int, what string) string { return fmt.Sprintf("z%d:%s", k, what) }

// ledgerFx is the effects of one ledger field: an increment in the jobs'
// slot and one relayed through the outbox.
func ledgerFx(ctx context.Context, ns, field string) error {
	return step.Effect(ctx,
		idempotency.HIncrBy(idempotency.SlotKey(ctx, "ledger"), field, 1),
		idempotency.HIncrBy(foreignLedger(ns), field, 1))
}

// reportStale reports a step the fence refused, as the ledger jobs do.
func reportStale(id, name string, err error) error {
	if errors.Is(err, step.ErrStale) {
		fmt.Printf("stale step %s %s\n", id, name)
	}
	return err
}

// registerWorkflows adds the approval workflow and the nap job to reg.
func registerWorkflows(reg *flow.Registry, ns string, rdb redis.UniversalClient) {
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[approvalJob]) error {
		k, a := job.Args.K, job.Args
		if err := step.Do(ctx, "a1", func(ctx context.Context) error {
			time.Sleep(time.Duration(10+rand.IntN(31)) * time.Millisecond)
			return ledgerFx(ctx, ns, wfField(k, "a1"))
		}); err != nil {
			return reportStale(job.ID, "a1", err)
		}
		var (
			token string
			got   bool
		)
		if a.Variant == wfRemind {
			sel := step.Select(ctx, "wait1")
			sig := step.OnSignal[string](sel, signalName)
			remind := sel.After("remind", a.Remind)
			sel.After("deadline", a.Timeout)
			if err := sel.Wait(); err != nil {
				return reportStale(job.ID, "wait1", err)
			}
			token, got = sig.Value(), sig.Fired()
			if remind.Fired() {
				claimed := job.Claimed.UnixMilli()
				if _, err := step.Run(ctx, "remind", func(ctx context.Context) (int64, error) {
					return claimed, ledgerFx(ctx, ns, wfField(k, "remind"))
				}); err != nil {
					return reportStale(job.ID, "remind", err)
				}
				sel = step.Select(ctx, "wait2")
				sig = step.OnSignal[string](sel, signalName)
				sel.After("deadline", a.Timeout)
				if err := sel.Wait(); err != nil {
					return reportStale(job.ID, "wait2", err)
				}
				token, got = sig.Value(), sig.Fired()
			}
		} else {
			var err error
			if token, got, err = step.WaitSignal[string](ctx, signalName, a.Timeout); err != nil {
				return reportStale(job.ID, signalName, err)
			}
		}
		if !got {
			token = timeoutToken
		}
		claimed := job.Claimed.UnixMilli()
		if _, err := step.Run(ctx, "a2", func(ctx context.Context) (receipt, error) {
			time.Sleep(time.Duration(5+rand.IntN(16)) * time.Millisecond)
			return receipt{Token: token, Claimed: claimed}, ledgerFx(ctx, ns, receiptField(k, token))
		}); err != nil {
			return reportStale(job.ID, "a2", err)
		}
		f := wfField(k, "done")
		return step.OnComplete(ctx,
			idempotency.HIncrBy(idempotency.SlotKey(ctx, "ledger"), f, 1),
			idempotency.HIncrBy(foreignLedger(ns), f, 1))
	}))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[napJob]) error {
		k := job.Args.K
		claimed := job.Claimed.UnixMilli()
		if _, err := step.Run(ctx, "n1", func(ctx context.Context) (int64, error) {
			time.Sleep(time.Duration(10+rand.IntN(31)) * time.Millisecond)
			return claimed, ledgerFx(ctx, ns, napField(k, "n1"))
		}); err != nil {
			return reportStale(job.ID, "n1", err)
		}
		if err := step.Sleep(ctx, "nap", job.Args.D); err != nil {
			return reportStale(job.ID, "nap", err)
		}
		if _, err := step.Run(ctx, "n2", func(ctx context.Context) (napResume, error) {
			now, err := redisTime(context.WithoutCancel(ctx), rdb)
			if err != nil {
				return napResume{}, err // transient: the job goes back without spending an attempt
			}
			return napResume{Claimed: claimed, Now: now.UnixMilli()}, ledgerFx(ctx, ns, napField(k, "n2"))
		}); err != nil {
			return reportStale(job.ID, "n2", err)
		}
		f := napField(k, "done")
		return step.OnComplete(ctx,
			idempotency.HIncrBy(idempotency.SlotKey(ctx, "ledger"), f, 1),
			idempotency.HIncrBy(foreignLedger(ns), f, 1))
	}))
}

// redisTime reads Redis's TIME, trying a few times while Redis restarts.
func redisTime(ctx context.Context, rdb redis.UniversalClient) (time.Time, error) {
	var err error
	for range 5 {
		var t time.Time
		if t, err = rdb.Time(ctx).Result(); err == nil {
			return t, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Time{}, err
}

// wfStats sums up the workflows and nap jobs the checks saw.
type wfStats struct {
	Plain, Remind, Silent int // workflows by variant
	Reminded              int // reminder workflows whose reminder fired first
	Kept                  int // second copies of a signal left kept after the workflow finished
	Naps                  int
	NapLagMax, NapLagSum  time.Duration // wake-up lag: n2's claim behind the nap's wake time
}

// checkWorkflows checks every approval workflow (IDs wf, workflow k at
// index k) against what the signaller sent it (sends, by k), read
// directly from Redis after the drain, and returns the ledger fields the
// workflows must have applied exactly once:
//   - completed, no attempt spent (suspensions and transient errors spend
//     none), its checkpoints those of its path (a1, the wait or waits, the
//     reminder, a2);
//   - a signalled workflow recorded in a2 a token the signaller sent it,
//     never timeoutToken (the deadline firing would mean a lost signal);
//     a silent one recorded timeoutToken, in an attempt claimed at or
//     after its timeout's wake time, and no signal is kept for it;
//   - every copy of its signal that the signaller's call had acknowledged
//     is the one a2 recorded or is still kept by the job: none vanished;
//     every kept copy is one the signaller sent, none twice, not the one
//     taken; a workflow whose signal went out in one acknowledged call
//     (no uncertain call before it) took exactly that copy and keeps none:
//     only an uncertain call (an error after Redis may have run it) can
//     leave a second copy, which stays kept, taken by no wait;
//   - a reminder that fired did so no earlier than its wake time.
//
// The ledger (checkLedger) then makes sure that each workflow recorded
// exactly one receipt (one "got:" field, applied once, in both ledgers).
func checkWorkflows(ctx context.Context, t *testing.T, c *flow.Client, wf []string, sends map[int]*sendLog) (map[string]bool, wfStats) {
	t.Helper()
	want := map[string]bool{}
	var st wfStats
	for k, id := range wf {
		info, err := c.Job(ctx, id)
		if err != nil {
			t.Errorf("workflow %d (%s) lost: %v", k, id, err)
			continue
		}
		var a approvalJob
		if err := info.DecodeArgs(&a); err != nil || a != approvalFor(k) {
			t.Errorf("workflow %d read back as %+v (%v), want %+v", k, a, err, approvalFor(k))
			continue
		}
		if info.State != flow.StateCompleted || info.Attempt != 0 {
			t.Errorf("workflow %d: %s (%s), attempt %d, crash_attempt %d, errors %+v; want completed, no attempt spent",
				k, info.State, info.Reason, info.Attempt, info.CrashAttempt, info.Errors)
		}
		var r receipt
		if err := info.DecodeStep("a2", &r); err != nil {
			t.Errorf("workflow %d: no receipt: %v", k, err)
			continue
		}
		var steps []string
		for _, s := range info.Steps {
			steps = append(steps, fmt.Sprintf("%s@%d", s.Name, s.Index))
		}
		wantSteps := []string{"a1@0", signalName + "@1", "a2@2"}
		switch a.Variant {
		case wfPlain:
			st.Plain++
		case wfSilent:
			st.Silent++
		case wfRemind:
			st.Remind++
			wantSteps = []string{"a1@0", "wait1@1", "a2@2"}
			if slices.Contains(steps, "remind@2") {
				st.Reminded++
				wantSteps = []string{"a1@0", "wait1@1", "remind@2", "wait2@3", "a2@4"}
				var at int64
				if err := info.DecodeStep("remind", &at); err != nil {
					t.Errorf("workflow %d: reminder: %v", k, err)
				} else if wake := timerWake(info, "remind"); wake.IsZero() || at < wake.UnixMilli() {
					t.Errorf("workflow %d: reminded in an attempt claimed at %d ms, its timer's wake time is %v", k, at, wake)
				}
				want[wfField(k, "remind")] = true
			}
		}
		if diff := cmp.Diff(wantSteps, steps); diff != "" {
			t.Errorf("workflow %d (variant %d) checkpoints (-want +got):\n%s", k, a.Variant, diff)
		}
		want[wfField(k, "a1")] = true
		want[receiptField(k, r.Token)] = true
		want[wfField(k, "done")] = true

		var kept []string
		for _, s := range info.Signals {
			var tok string
			if err := msgpack.Unmarshal(s.Payload, &tok); err != nil || s.Name != signalName {
				t.Errorf("workflow %d: kept signal %q #%d with payload %q (%v)", k, s.Name, s.Seq, s.Payload, err)
				continue
			}
			kept = append(kept, tok)
		}
		sl := sends[k]
		if a.Variant == wfSilent {
			if sl != nil || r.Token != timeoutToken || len(kept) > 0 {
				t.Errorf("workflow %d (silent): sent %+v, recorded %q, keeps %q; want no signal, the timeout recorded, nothing kept", k, sl, r.Token, kept)
			}
			if wake := timerWake(info, signalName+".timeout"); wake.IsZero() || r.Claimed < wake.UnixMilli() {
				t.Errorf("workflow %d (silent): timed out in an attempt claimed at %d ms, its timer's wake time is %v", k, r.Claimed, wake)
			}
			continue
		}
		if sl == nil {
			t.Errorf("workflow %d: the signaller has no record of it", k)
			continue
		}
		st.Kept += len(kept)
		for _, p := range sl.problems(r.Token, kept) {
			t.Errorf("workflow %d (%s, variant %d): %s; sent %+v, recorded %q, keeps %q", k, id, a.Variant, p, *sl, r.Token, kept)
		}
	}
	return want, st
}

// problems lists what is wrong with a workflow that recorded token and
// keeps the copies kept, given what was sent to it.
func (sl *sendLog) problems(token string, kept []string) []string {
	var out []string
	sent := map[string]bool{}
	for _, tok := range sl.Tokens {
		sent[tok] = true
	}
	if token == timeoutToken {
		out = append(out, "the deadline fired: the signal was lost")
	} else if !sent[token] {
		out = append(out, fmt.Sprintf("recorded %q, a token never sent to it", token))
	}
	seen := map[string]bool{}
	for _, tok := range kept {
		switch {
		case !sent[tok]:
			out = append(out, fmt.Sprintf("keeps %q, a token never sent to it", tok))
		case tok == token:
			out = append(out, fmt.Sprintf("keeps %q, the copy it took", tok))
		case seen[tok]:
			out = append(out, fmt.Sprintf("keeps %q twice", tok))
		}
		seen[tok] = true
	}
	if sl.Acked != "" && sl.Acked != token && !seen[sl.Acked] {
		out = append(out, fmt.Sprintf("the acknowledged copy %q was neither taken nor kept: lost", sl.Acked))
	}
	if sl.Uncertain == 0 && (token != sl.Acked || len(kept) > 0) {
		out = append(out, "one acknowledged call, but not exactly its copy taken and nothing kept")
	}
	if sl.Acked == "" && !sl.Finished {
		out = append(out, "the signal was never acknowledged")
	}
	return out
}

// timerWake is the wake time of info's timer name, zero if it has none.
func timerWake(info *flow.JobInfo, name string) time.Time {
	for _, tm := range info.Timers {
		if tm.Name == name {
			return tm.Wake
		}
	}
	return time.Time{}
}

// checkNaps checks every nap job (IDs naps, job k at index k) and returns
// the ledger fields they must have applied exactly once: completed, no
// attempt spent, checkpoints n1, nap, n2; the nap's wake time at least D
// after n1's attempt was claimed (the clock starts when the job first
// reaches the sleep and is never restarted: it may start later than n1,
// not earlier); n2 run by an attempt claimed no earlier than the wake
// time, and Redis's TIME as n2 ran no earlier either.
func checkNaps(ctx context.Context, t *testing.T, c *flow.Client, naps []string, st *wfStats) map[string]bool {
	t.Helper()
	want := map[string]bool{}
	wantSteps := []string{"n1@0", "nap@1", "n2@2"}
	for k, id := range naps {
		info, err := c.Job(ctx, id)
		if err != nil {
			t.Errorf("nap job %d (%s) lost: %v", k, id, err)
			continue
		}
		var a napJob
		if err := info.DecodeArgs(&a); err != nil || a != napFor(k) {
			t.Errorf("nap job %d read back as %+v (%v), want %+v", k, a, err, napFor(k))
			continue
		}
		if info.State != flow.StateCompleted || info.Attempt != 0 {
			t.Errorf("nap job %d: %s (%s), attempt %d, crash_attempt %d, errors %+v; want completed, no attempt spent",
				k, info.State, info.Reason, info.Attempt, info.CrashAttempt, info.Errors)
		}
		var steps []string
		for _, s := range info.Steps {
			steps = append(steps, fmt.Sprintf("%s@%d", s.Name, s.Index))
		}
		if diff := cmp.Diff(wantSteps, steps); diff != "" {
			t.Errorf("nap job %d checkpoints (-want +got):\n%s", k, diff)
		}
		for _, f := range []string{"n1", "n2", "done"} {
			want[napField(k, f)] = true
		}
		var n1 int64
		var n2 napResume
		if err := errors.Join(info.DecodeStep("n1", &n1), info.DecodeStep("n2", &n2)); err != nil {
			t.Errorf("nap job %d: %v", k, err)
			continue
		}
		wake := timerWake(info, "nap").UnixMilli()
		if len(info.Timers) != 1 || wake < n1+a.D.Milliseconds() || n2.Claimed < wake || n2.Now < wake {
			t.Errorf("nap job %d: timers %+v (wake %d ms); n1 claimed at %d ms, sleep %s: want one timer \"nap\" waking no earlier than %d; n2 claimed at %d, ran at %d: want both at or after the wake time",
				k, info.Timers, wake, n1, a.D, n1+a.D.Milliseconds(), n2.Claimed, n2.Now)
			continue
		}
		st.Naps++
		lag := time.Duration(n2.Claimed-wake) * time.Millisecond
		st.NapLagSum += lag
		st.NapLagMax = max(st.NapLagMax, lag)
	}
	return want
}

// summary is the workflows' part of the run's summary.
func (st wfStats) summary(sg *signaller, naps int) string {
	ss := sg.stats()
	mean := time.Duration(0)
	if st.Naps > 0 {
		mean = st.NapLagSum / time.Duration(st.Naps)
	}
	return fmt.Sprintf("%d workflows (%d plain, %d with a reminder, %d reminded first, %d silent and timed out): "+
		"%d signals sent in %d calls (%d before the wait, %d to a workflow seen suspended, %d late but not seen waiting; %d through a client without retries), "+
		"%d signal replies lost and %d signal calls delivered twice on purpose, %d calls uncertain, %d re-sends found the workflow finished, %d second copies left kept, "+
		"%d suspended workflows checked in their indexes; "+
		"%d nap jobs, %d resumed no earlier than their wake time (claim behind it: mean %s, max %s)",
		st.Plain+st.Remind+st.Silent, st.Plain, st.Remind, st.Reminded, st.Silent,
		ss.Workflows, ss.Calls, ss.Early, ss.Observed, ss.Unobserved, ss.Bare,
		ss.Drops, ss.Dups, ss.Uncertain, ss.Finished, st.Kept, ss.Probes,
		naps, st.Naps, mean.Round(time.Millisecond), st.NapLagMax.Round(time.Millisecond))
}
