// Command approval is an expense approval workflow that waits for days
// without holding a worker: it waits for a "decision" signal for up to
// three days, sends the approver a reminder after one, and escalates the
// expense if nobody decides.
//
// With no flags it runs a demo of the three outcomes on an embedded Redis
// (miniredis), with a "day" of 3 seconds (-day). With REDIS_URL set,
// -worker runs a worker until Ctrl-C and -submit submits one expense, so
// that the sluice CLI can follow, signal and outlive them. README.md has
// the walkthrough.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/examples/internal/exampleredis"
	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

// Expense is the job: a request to be refunded.
type Expense struct {
	By       string
	Cents    int64
	What     string
	Approver string
}

// Kind names the job type.
func (Expense) Kind() string { return "expense" }

// Decision is the payload of the "decision" signal.
type Decision struct {
	Approved bool
	By       string
	Note     string
}

// Outcome is a finished expense's stored result.
type Outcome struct {
	Status   string // approved, rejected or escalated
	By       string // who decided, or to whom it was escalated
	Note     string
	Reminded bool // a reminder was sent
}

const (
	queue     = "expenses"
	namespace = "approval" // of -worker and -submit; the CLI takes it from SLUICE_NAMESPACE
)

func main() {
	worker := flag.Bool("worker", false, "run a worker until Ctrl-C (needs REDIS_URL)")
	submit := flag.Bool("submit", false, "submit one expense and print its job ID (needs REDIS_URL)")
	day := flag.Duration("day", 0, "how long a day lasts (default 24h with -worker, 3s in the demo)")
	id := flag.String("id", "exp-1", "-submit: the expense's ID (submitting it again adds nothing)")
	by := flag.String("by", "grace", "-submit: who asks")
	cents := flag.Int64("cents", 12900, "-submit: the amount, in cents")
	what := flag.String("what", "train to the Lisbon conference", "-submit: what for")
	flag.Parse()
	usage := ""
	switch {
	case *worker && *submit:
		usage = "-worker and -submit are separate commands"
	case (*worker || *submit) && os.Getenv("REDIS_URL") == "":
		usage = "-worker and -submit need a Redis that outlives this process: set REDIS_URL (see README.md)"
	case *day < 0:
		usage = "-day must be positive"
	}
	if usage != "" {
		fmt.Fprintln(os.Stderr, "approval:", usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch {
	case *worker:
		err = runWorker(ctx, cmp.Or(*day, 24*time.Hour))
	case *submit:
		err = runSubmit(ctx, *id, Expense{By: *by, Cents: *cents, What: *what, Approver: "ada"})
	default:
		err = runDemo(ctx, cmp.Or(*day, 3*time.Second))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "approval:", err)
		os.Exit(1)
	}
}

// approvals holds the handler's settings.
type approvals struct {
	day time.Duration // a reminder after one, escalation after three
	out io.Writer
}

// handle is the workflow. Each wait is a durable step: the first time the
// job reaches it, its timers' wake times are fixed in Redis's time and
// the handler returns the step's *sluicetype.SuspendedError: the job is
// suspended, holding no worker. When a timer is due or a signal comes,
// the handler runs again from the top, its finished steps skipped.
func (a *approvals) handle(ctx context.Context, job *flow.Job[Expense]) (Outcome, error) {
	e, id := job.Args, job.ID
	if err := step.Do(ctx, "record", func(context.Context) error {
		a.say(id, "%s asks %s for %s: %s", e.By, e.Approver, euros(e.Cents), e.What)
		return nil
	}); err != nil {
		return Outcome{}, err
	}

	// A decision, a reminder after a day, or give up after three.
	sel := step.Select(ctx, "wait")
	decision := step.OnSignal[Decision](sel, "decision")
	remind := sel.After("remind", a.day)
	sel.After("give-up", 3*a.day)
	if err := sel.Wait(); err != nil {
		return Outcome{}, a.suspended(id, err)
	}
	if remind.Fired() {
		if err := step.Do(ctx, "remind", func(context.Context) error {
			a.say(id, "reminder to %s: %s's expense has waited a day for a decision", e.Approver, e.By)
			return nil
		}); err != nil {
			return Outcome{}, err
		}
		// Wait again. Timers are named per job: "give-up" keeps the wake
		// time the first Select fixed, three days after the request.
		sel = step.Select(ctx, "wait-again")
		decision = step.OnSignal[Decision](sel, "decision")
		sel.After("give-up", 3*a.day)
		if err := sel.Wait(); err != nil {
			return Outcome{}, a.suspended(id, err)
		}
	}

	out := Outcome{Reminded: remind.Fired()}
	if !decision.Fired() { // give-up fired first
		out.Status, out.By = "escalated", "finance"
		return out, step.Do(ctx, "escalate", func(context.Context) error {
			a.say(id, "no decision in 3 days: escalated to %s", out.By)
			return nil
		})
	}
	d := decision.Value()
	out.By, out.Note = d.By, d.Note
	if !d.Approved {
		out.Status = "rejected"
		return out, step.Do(ctx, "reject", func(context.Context) error {
			a.say(id, "rejected by %s (%q): %s is told", d.By, d.Note, e.By)
			return nil
		})
	}
	out.Status = "approved"
	return out, step.Do(ctx, "book", func(context.Context) error {
		a.say(id, "approved by %s: %s booked for refund to %s", d.By, euros(e.Cents), e.By)
		return nil
	})
}

// suspended reports a wait's suspension and returns err for the handler
// to return.
func (a *approvals) suspended(id string, err error) error {
	if s, ok := errors.AsType[*sluicetype.SuspendedError](err); ok {
		timers := make([]string, len(s.Timers))
		for i, t := range s.Timers {
			timers[i] = t.Name
		}
		a.say(id, "suspended: waiting for signal %v or timers %v (no worker held)", s.Signals, timers)
	}
	return err
}

func (a *approvals) say(id, format string, args ...any) {
	fmt.Fprintf(a.out, "%s %-16s "+format+"\n", append([]any{time.Now().Format("15:04:05.0"), id}, args...)...)
}

func (a *approvals) registry() (*flow.Registry, error) {
	reg := flow.NewRegistry()
	return reg, flow.RegisterResult(reg, a.handle)
}

func newWorker(rdb redis.UniversalClient, reg *flow.Registry, ns string) (*runtime.Worker, error) {
	return runtime.NewWorker(rdb, reg, runtime.Options{
		Namespace: ns,
		Queues:    map[string]int{queue: 1},
		Logger:    slog.New(slog.DiscardHandler),
	})
}

// runWorker serves the expenses queue until ctx ends (Ctrl-C).
func runWorker(ctx context.Context, day time.Duration) error {
	rdb, where, err := exampleredis.Connect()
	if err != nil {
		return err
	}
	defer rdb.Close()
	a := &approvals{day: day, out: os.Stdout}
	reg, err := a.registry()
	if err != nil {
		return err
	}
	w, err := newWorker(rdb, reg, namespace)
	if err != nil {
		return err
	}
	fmt.Printf("worker on %s, namespace %s, a day is %s; Ctrl-C stops it\n", where, namespace, day)
	if err := w.Run(ctx); err != nil {
		return err
	}
	fmt.Println("worker stopped")
	return nil
}

// runSubmit enqueues one expense under its ID and prints the job's ID.
func runSubmit(ctx context.Context, id string, e Expense) error {
	rdb, _, err := exampleredis.Connect()
	if err != nil {
		return err
	}
	defer rdb.Close()
	reg, err := (&approvals{}).registry()
	if err != nil {
		return err
	}
	client, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: namespace, Registry: reg})
	if err != nil {
		return err
	}
	res, err := client.Enqueue(ctx, e, flow.WithQueue(queue), flow.WithID(id))
	if err != nil {
		return err
	}
	if res.Duplicate {
		fmt.Print("already submitted: ")
	}
	fmt.Println(res.ID)
	return nil
}

// runDemo runs the three outcomes on the embedded Redis (or REDIS_URL).
func runDemo(ctx context.Context, day time.Duration) error {
	rdb, where, err := exampleredis.Connect()
	if err != nil {
		return err
	}
	defer rdb.Close()
	fmt.Printf("redis: %s; a day is %s\n", where, day)
	outcomes, err := demo(ctx, rdb, os.Stdout, day)
	if err != nil {
		return err
	}
	fmt.Println("outcomes:")
	for _, o := range outcomes {
		fmt.Printf("  %-16s %+v\n", o.ID, o.Outcome)
	}
	return nil
}

// Result is one demo expense's job ID and outcome.
type Result struct {
	ID      string
	Outcome Outcome
}

// demo runs a worker and three expenses, in a namespace of their own:
// exp-1 is approved at once; nobody answers exp-2, which is reminded,
// then escalated; exp-3 is reminded, then rejected.
func demo(ctx context.Context, rdb redis.UniversalClient, out io.Writer, day time.Duration) ([]Result, error) {
	ns := fmt.Sprintf("approval-demo-%d", time.Now().UnixNano())
	a := &approvals{day: day, out: out}
	reg, err := a.registry()
	if err != nil {
		return nil, err
	}
	client, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	if err != nil {
		return nil, err
	}
	w, err := newWorker(rdb, reg, ns)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(runCtx) }()

	ids := make([]string, 3)
	for i, e := range []Expense{
		{By: "grace", Cents: 12900, What: "train to the Lisbon conference", Approver: "ada"},
		{By: "linus", Cents: 4500, What: "a mechanical keyboard", Approver: "ada"},
		{By: "barbara", Cents: 89000, What: "a standing desk", Approver: "ada"},
	} {
		res, err := client.Enqueue(ctx, e, flow.WithQueue(queue), flow.WithID(fmt.Sprintf("exp-%d", i+1)))
		if err != nil {
			return nil, err
		}
		ids[i] = res.ID
	}

	// ada approves exp-1 once it waits (a signal sent earlier would be
	// kept for it), and rejects exp-3 after its reminder.
	waiting := func(j *flow.JobInfo) bool { return slices.Contains(j.AwaitingSignals, "decision") }
	if err := waitFor(ctx, client, ids[0], waiting); err != nil {
		return nil, err
	}
	if err := a.signal(ctx, client, ids[0], Decision{Approved: true, By: "ada"}); err != nil {
		return nil, err
	}
	reminded := func(j *flow.JobInfo) bool {
		return waiting(j) && slices.ContainsFunc(j.Steps, func(s flow.StepInfo) bool { return s.Name == "remind" })
	}
	if err := waitFor(ctx, client, ids[2], reminded); err != nil {
		return nil, err
	}
	if err := a.signal(ctx, client, ids[2], Decision{By: "ada", Note: "over the 500 EUR limit"}); err != nil {
		return nil, err
	}

	results := make([]Result, len(ids))
	for i, id := range ids {
		o, err := flow.Result[Outcome](ctx, client, id) // returns once the job has finished
		if err != nil {
			return nil, err
		}
		results[i] = Result{ID: id, Outcome: o}
	}
	stop()
	return results, <-stopped
}

// signal sends d as the job's "decision" signal, as `sluice jobs signal`
// does.
func (a *approvals) signal(ctx context.Context, c *flow.Client, id string, d Decision) error {
	a.say(id, "<- signal decision %+v", d)
	return c.Signal(ctx, id, "decision", d)
}

// waitFor reads the job until cond holds; a job that finished first is an
// error.
func waitFor(ctx context.Context, c *flow.Client, id string, cond func(*flow.JobInfo) bool) error {
	for {
		j, err := c.Job(ctx, id)
		switch {
		case err != nil:
			return err
		case cond(j):
			return nil
		case j.State == flow.StateCompleted || j.State == flow.StateArchived || j.State == flow.StateQuarantined || j.State == flow.StateCancelled:
			return fmt.Errorf("%s ended %s before the demo could signal it: %s", id, j.State, j.LastError)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func euros(cents int64) string { return fmt.Sprintf("%d.%02d EUR", cents/100, cents%100) }
