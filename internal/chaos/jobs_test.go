package chaos

// The jobs of the chaos suite and the registry that runs them.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

// ledgerSteps is the number of durable steps of a ledger job.
const ledgerSteps = 4

// ledgerJob is the ordinary job: ledgerSteps steps, each committing one
// increment of its own counter in two ledgers, and a completion effect.
// Pad is padFor(N): every fourth job carries a payload long enough for a
// key of its own (lua/lib_chunks.lua, BODY_MIN), which must reach every attempt
// intact. A non-zero Pause is how long each step works, instead of
// 10-40 ms.
type ledgerJob struct {
	N     int
	Pad   []byte
	Pause time.Duration `json:",omitempty"`
}

// padFor is job n's padding.
func padFor(n int) []byte {
	if n%4 != 0 {
		return nil
	}
	return bytes.Repeat([]byte{byte('a' + n%26)}, 2000)
}

// badPayloads is the set of jobs an attempt saw with the wrong padding.
func badPayloads(ns string) string { return ns + ":badpayload" }

func (ledgerJob) Kind() string { return "chaos_ledger" }

// poisonJob panics in every attempt; it must end quarantined.
type poisonJob struct{}

func (poisonJob) Kind() string { return "chaos_poison" }

// exitPill ends its worker process with os.Exit(exitPillStatus) in every
// attempt, taking the innocent jobs running beside it down with it (the
// process's other worker runs the ledger jobs); it must end quarantined,
// and only it. The fleet restarts a process that exits so.
type exitPill struct{}

func (exitPill) Kind() string { return "chaos_exit" }

// exitPills is how many exit pills a run of the faults for dur enqueues
// (IDs exitPillID(i)): each ends a worker process about poisonCrashLimit
// times, and a worker process built with -race takes seconds to start on
// a loaded machine: one in the runs of make test (20 s and less), one more
// per 30 s, up to three.
func exitPills(dur time.Duration) int { return min(1+int(dur/(30*time.Second)), 3) }

func exitPillID(i int) string { return fmt.Sprintf("exit%d", i) }

// exitPillStatus is the exit status of a process an exit pill ended; no
// other path of a worker process exits with it.
const exitPillStatus = 3

// poisonQueue holds the culprits, the poison pill and the exit pills,
// served by workers with the default crash limit (see childMain).
const poisonQueue = "poison"

// badEffectJob commits a valid effect (an increment of a ledger field, in
// the jobs' slot and outside it) together with one that cannot apply, in a
// step (badStep*) or with its completion (badDone*); the invalid one is
// refused before Redis (a ZADD of a NaN score, store.validateEffect) or by
// the script (an INCRBY of a key holding a list, lua/lib_effects.lua). The
// commit must be refused whole, every attempt: the job, enqueued with
// badMaxAttempts, ends archived, and its ledger field never exists. Bad
// jobs run among the ledger jobs, so their refused commits share batched
// checkpoint and ack calls with valid ones, which must go through.
type badEffectJob struct {
	K    int
	Mode int
}

func (badEffectJob) Kind() string { return "chaos_bad_effect" }

// The modes of a bad-effect job (badEffectJob.Mode = K % badModes).
const (
	badStepNaN  = iota // a step commits a ZADD with a NaN score
	badStepList        // a step commits an INCRBY of a list
	badDoneNaN         // the completion commits a ZADD with a NaN score
	badDoneList        // the completion commits an INCRBY of a list
	badModes
)

// badMaxAttempts is a bad-effect job's max attempts.
const badMaxAttempts = 2

// badEvery: the producer adds bad-effect job K alongside ledger job
// badEvery*K + badEvery/2.
const badEvery = 8

func badJobID(k int) string { return fmt.Sprintf("b%d", k) }

// badField is the ledger field of bad-effect job k's valid effect.
func badField(k int) string { return fmt.Sprintf("b%d:fx", k) }

// badList is the name (idempotency.SlotKey) of the list in the jobs' slot
// that the INCRBY effects of bad-effect jobs hit; the test creates it.
const badList = "badlist"

// badClass is the class of the errors that a bad-effect job of mode m
// records: a refused step commit fails the attempt as the error the
// handler returns ("error"), a refused completion fails it in the ack
// ("effect", lua/ack.lua).
func badClass(mode int) string {
	if mode == badDoneNaN || mode == badDoneList {
		return "effect"
	}
	return "error"
}

// ledgerField names one effect of job n: step i (1-based) or "done" for
// the completion.
func ledgerField(n int, what string) string { return fmt.Sprintf("j%d:%s", n, what) }

func stepName(i int) string { return fmt.Sprintf("s%d", i) }

// foreignLedger is a hash outside the jobs' slot: effects on it go through
// the outbox and are relayed.
func foreignLedger(ns string) string { return ns + ":ledger" }

// stepRuns counts, outside Sluice, how often each step's work started.
func stepRuns(ns string) string { return ns + ":runs" }

// registry runs the ledger job, the bad-effect job, the culprits (the
// poison pill and the exit pill) and the workflows (workflows_test.go).
// Each ledger step works for 10-40 ms without watching its context, like
// a handler that ignores cancellation: a worker that was stopped past its
// lease wakes up and still tries to commit, and the fence must refuse it.
// Every refused commit is reported on stdout as "stale step <job> <step>".
func registry(ns string, rdb redis.UniversalClient) *flow.Registry {
	reg := flow.NewRegistry()
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[ledgerJob]) error {
		n := job.Args.N
		fmt.Printf("started %s\n", job.ID)    // every attempt that reaches its handler (TestChaosLostReplies)
		if testkit.PushedLease(job.LeaseID) { // leased by its enqueue
			fmt.Printf("push started %s\n", job.ID)
		}
		if !bytes.Equal(job.Args.Pad, padFor(n)) {
			_ = rdb.SAdd(context.WithoutCancel(ctx), badPayloads(ns), n).Err()
			return fmt.Errorf("job %d: %d bytes of padding, want %d", n, len(job.Args.Pad), len(padFor(n)))
		}
		for i := 1; i <= ledgerSteps; i++ {
			name := stepName(i)
			field := ledgerField(n, name)
			err := step.Do(ctx, name, func(ctx context.Context) error {
				_ = rdb.HIncrBy(context.WithoutCancel(ctx), stepRuns(ns), field, 1).Err() // statistics only
				pause := job.Args.Pause
				if pause == 0 {
					pause = time.Duration(10+rand.IntN(31)) * time.Millisecond
				}
				time.Sleep(pause)
				return step.Effect(ctx,
					idempotency.HIncrBy(idempotency.SlotKey(ctx, "ledger"), field, 1),
					idempotency.HIncrBy(foreignLedger(ns), field, 1))
			})
			if errors.Is(err, step.ErrStale) {
				fmt.Printf("stale step %s %s\n", job.ID, name)
			}
			if err != nil {
				return err
			}
		}
		field := ledgerField(n, "done")
		return step.OnComplete(ctx,
			idempotency.HIncrBy(idempotency.SlotKey(ctx, "ledger"), field, 1),
			idempotency.HIncrBy(foreignLedger(ns), field, 1))
	}))
	must(flow.Register(reg, func(context.Context, *flow.Job[poisonJob]) error {
		panic("poison pill")
	}))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[exitPill]) error {
		time.Sleep(50 * time.Millisecond) // let the other worker's jobs run beside it
		fmt.Printf("exit pill %s\n", job.ID)
		os.Exit(exitPillStatus)
		return nil
	}))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[badEffectJob]) error {
		k, mode := job.Args.K, job.Args.Mode
		field := badField(k)
		var bad sluicetype.Effect
		switch mode % badModes {
		case badStepNaN, badDoneNaN:
			bad = idempotency.ZAdd(idempotency.SlotKey(ctx, "badz"), math.NaN(), field)
		default:
			list := idempotency.SlotKey(ctx, badList)
			_ = rdb.RPush(context.WithoutCancel(ctx), list, "not a counter").Err() // the test made it; keep it a list
			bad = idempotency.IncrBy(list, 1)
		}
		fx := []sluicetype.Effect{
			idempotency.HIncrBy(idempotency.SlotKey(ctx, "ledger"), field, 1),
			idempotency.HIncrBy(foreignLedger(ns), field, 1),
			bad,
		}
		if mode == badDoneNaN || mode == badDoneList {
			return step.OnComplete(ctx, fx...)
		}
		err := step.Do(ctx, "s1", func(ctx context.Context) error {
			return step.Effect(ctx, fx...)
		})
		if errors.Is(err, step.ErrStale) {
			fmt.Printf("stale step %s s1\n", job.ID)
		}
		return err
	}))
	registerWorkflows(reg, ns, rdb)
	return reg
}

// transient reports errors of an unreachable or restarting Redis: the job
// goes back without spending an attempt (runtime Options.NonConsuming), so
// that chaos does not archive ordinary jobs.
func transient(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, redis.ErrPoolTimeout) || redis.IsLoadingError(err)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
