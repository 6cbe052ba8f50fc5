package chaos

// The jobs of the chaos suite and the registry that runs them.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/step"
)

// ledgerSteps is the number of durable steps of a ledger job.
const ledgerSteps = 4

// ledgerJob is the ordinary job: ledgerSteps steps, each committing one
// increment of its own counter in two ledgers, and a completion effect.
// Pad is padFor(N): every fourth job carries a payload long enough for a
// key of its own (lua/lib.lua, BODY_MIN), which must reach every attempt
// intact.
type ledgerJob struct {
	N   int
	Pad []byte
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

// poisonQueue holds only the poison pill, served by workers with the
// default crash limit (see childMain).
const poisonQueue = "poison"

// ledgerField names one effect of job n: step i (1-based) or "done" for
// the completion.
func ledgerField(n int, what string) string { return fmt.Sprintf("j%d:%s", n, what) }

func stepName(i int) string { return fmt.Sprintf("s%d", i) }

// foreignLedger is a hash outside the jobs' slot: effects on it go through
// the outbox and are relayed.
func foreignLedger(ns string) string { return ns + ":ledger" }

// stepRuns counts, outside Sluice, how often each step's work started.
func stepRuns(ns string) string { return ns + ":runs" }

// registry runs the ledger job and the poison pill. Each step works for
// 10-40 ms without watching its context, like a handler that ignores
// cancellation: a worker that was stopped past its lease wakes up and
// still tries to commit, and the fence must refuse it. Every refused
// commit is reported on stdout as "stale step <job> <step>".
func registry(ns string, rdb redis.UniversalClient) *flow.Registry {
	reg := flow.NewRegistry()
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[ledgerJob]) error {
		n := job.Args.N
		if !bytes.Equal(job.Args.Pad, padFor(n)) {
			_ = rdb.SAdd(context.WithoutCancel(ctx), badPayloads(ns), n).Err()
			return fmt.Errorf("job %d: %d bytes of padding, want %d", n, len(job.Args.Pad), len(padFor(n)))
		}
		for i := 1; i <= ledgerSteps; i++ {
			name := stepName(i)
			field := ledgerField(n, name)
			err := step.Do(ctx, name, func(ctx context.Context) error {
				_ = rdb.HIncrBy(context.WithoutCancel(ctx), stepRuns(ns), field, 1).Err() // statistics only
				time.Sleep(time.Duration(10+rand.IntN(31)) * time.Millisecond)
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
