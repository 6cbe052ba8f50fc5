package runtime

import "context"

// Handlers run on runner goroutines that outlive one attempt: a runner
// that finished an attempt waits for the next one instead of exiting, so a
// busy worker does not pay for a new goroutine, the growth of its stack
// and the lookup of its ID (which stuck reports need) on every job. There
// are never more runners than attempts that ran at once, plus those
// between the end of an attempt and their next wait; they all exit when
// Run returns.

// runTask is an attempt handed to a runner.
type runTask struct {
	ctx context.Context
	a   *Attempt
}

// runners is the pool of one Run.
type runners struct {
	tasks chan runTask  // unbuffered: a send succeeds only to a waiting runner
	quit  chan struct{} // closed when Run returns
}

func newRunners() *runners {
	return &runners{tasks: make(chan runTask), quit: make(chan struct{})}
}

// run hands the attempt to an idle runner, or starts a new one.
func (w *Worker) run(ctx context.Context, a *Attempt) {
	select {
	case w.pool.tasks <- runTask{ctx, a}:
	default:
		go w.runner(w.pool, runTask{ctx, a})
	}
}

// runner executes attempts until the pool closes. A handler that calls
// runtime.Goexit ends its runner (execute settles the attempt first).
func (w *Worker) runner(p *runners, t runTask) {
	gid := goid()
	for {
		w.execute(t.ctx, t.a, gid)
		select {
		case t = <-p.tasks:
		case <-p.quit:
			return
		}
	}
}
