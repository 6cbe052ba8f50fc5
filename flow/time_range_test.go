package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// latest is Go's usual "the latest time there is".
var latest = time.Unix(1<<63-62135596801, 999999999)

// farTimes are times past flow.MaxTime: kept as unix milliseconds they
// read back as "never", or wrap into the past (a job due now, a deadline
// long passed).
var farTimes = map[string]time.Time{
	"latest":    latest,
	"unix 2^62": time.Unix(1<<62, 0),
	"year 3e8":  time.Date(300000000, 1, 1, 0, 0, 0, 0, time.UTC),
	"past max":  flow.MaxTime.Add(time.Millisecond),
}

// TestTimesOutOfRangeRefused: a run time, deadline, timer or selector
// bound past MaxTime is refused (ErrInvalid, ErrInvalidWait) rather than
// kept as another time; a far but representable one is kept as given.
func TestTimesOutOfRangeRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := newClient(t, realRedis(t), nil)
	for name, at := range farTimes {
		if _, err := c.Enqueue(ctx, email{To: name}, flow.WithRunAt(at)); !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("WithRunAt(%s): %v, want ErrInvalid", name, err)
		}
		if _, err := c.Enqueue(ctx, email{To: name}, flow.WithDeadline(at)); !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("WithDeadline(%s): %v, want ErrInvalid", name, err)
		}
		_, err := store.SuspendSpec(&sluicetype.SuspendedError{Timers: []sluicetype.Timer{{Name: "nap", At: at}}})
		if !errors.Is(err, store.ErrInvalidWait) {
			t.Errorf("a timer at %s: %v, want ErrInvalidWait", name, err)
		}
		sel := admin.Selector{Queue: "default", State: flow.StateArchived, FinishedAfter: at}
		if _, err := admin.New(c).RedriveSelected(ctx, sel, admin.RedriveOptions{DryRun: true}); !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("a selector finished after %s: %v, want ErrInvalid", name, err)
		}
	}
	far := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	res, err := c.Enqueue(ctx, email{To: "far"}, flow.WithRunAt(far), flow.WithDeadline(far.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	j, err := c.Job(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != flow.StateScheduled || !j.RunAt.Equal(far) || !j.Deadline.Equal(far.Add(time.Hour)) {
		t.Errorf("year 9999: %s due %v, deadline %v", j.State, j.RunAt, j.Deadline)
	}
}

// TestDeadlineAtEpochIsPassed: a deadline at or before 1970 has passed;
// kept as 0 it read back as no deadline at all.
func TestDeadlineAtEpochIsPassed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := newClient(t, realRedis(t), nil)
	for _, at := range []time.Time{time.Unix(0, 0), time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)} {
		res, err := c.Enqueue(ctx, email{To: "x"}, flow.WithDeadline(at))
		if err != nil {
			t.Fatal(err)
		}
		j, err := c.Job(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.Deadline.IsZero() || j.Deadline.After(time.UnixMilli(1)) {
			t.Errorf("WithDeadline(%v): the job's deadline reads %v", at, j.Deadline)
		}
	}
}

// laterByDefault is delayed an hour by its kind's defaults.
type laterByDefault struct{}

func (laterByDefault) Kind() string { return "later_by_default" }

func (laterByDefault) Defaults() []flow.EnqueueOption {
	return []flow.EnqueueOption{flow.WithDelay(time.Hour)}
}

// TestRunAtAndDelayLastWins: options given with a job override its kind's
// defaults, and a later option an earlier one: of WithRunAt and
// WithDelay, the last given sets the due time (the delay always won).
func TestRunAtAndDelayLastWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := newClient(t, realRedis(t), nil)
	at := time.Now().Add(5 * time.Minute).Truncate(time.Millisecond)
	for name, tc := range map[string]struct {
		args flow.Args
		opts []flow.EnqueueOption
		due  time.Time
	}{
		"default delay, then run at": {laterByDefault{}, []flow.EnqueueOption{flow.WithRunAt(at)}, at},
		"delay, then run at":         {email{To: "x"}, []flow.EnqueueOption{flow.WithDelay(time.Hour), flow.WithRunAt(at)}, at},
		"run at, then delay":         {email{To: "x"}, []flow.EnqueueOption{flow.WithRunAt(at), flow.WithDelay(2 * time.Hour)}, time.Now().Add(2 * time.Hour)},
	} {
		res, err := c.Enqueue(ctx, tc.args, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		j, err := c.Job(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := j.RunAt.Sub(tc.due); d < -time.Minute || d > time.Minute {
			t.Errorf("%s: due %v, want about %v", name, j.RunAt, tc.due)
		}
	}
}

// TestRatePeriodRoundsUp: a rate of 1 job per 1.9 ms is kept as 1 per
// 2 ms, never faster than asked (it was 1 per 1 ms: nearly twice the
// rate).
func TestRatePeriodRoundsUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := realRedis(t)
	c, ns := newClient(t, rdb, nil)
	per := 1900 * time.Microsecond
	if _, err := c.Enqueue(ctx, email{To: "x"}, flow.WithRateLimit("smtp", flow.RateLimit{Jobs: 1, Per: per})); err != nil {
		t.Fatal(err)
	}
	got, err := rdb.HGet(ctx, keys.Partition{NS: ns, Queue: "default"}.RateBucket("smtp"), "p").Result()
	if err != nil {
		t.Fatal(err)
	}
	if got != "2" {
		t.Errorf("RateLimit{Jobs: 1, Per: %s}: the bucket's period is %s ms, want 2", per, got)
	}
}

// TestDeadlineNotAfterRunTimeRefused: a job whose deadline is not after
// its run time could never run (it would be archived deadline_exceeded
// when it came due), and was accepted (found by an audit). It is refused
// (ErrInvalid) and nothing is written; one a millisecond after is taken.
func TestDeadlineNotAfterRunTimeRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := realRedis(t)
	c, ns := newClient(t, rdb, nil)
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	for _, dl := range []time.Time{at.Add(-59 * time.Minute), at} {
		if res, err := c.Enqueue(ctx, email{To: "never"}, flow.WithRunAt(at), flow.WithDeadline(dl)); !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("run at %v, deadline %v: %+v %v, want ErrInvalid", at, dl, res, err)
		}
	}
	if n := len(rdb.Keys(ctx, "{"+ns+":*:j:*").Val()); n != 0 {
		t.Fatalf("%d job keys after the refused enqueues", n)
	}
	if _, err := c.Enqueue(ctx, email{To: "soon"}, flow.WithRunAt(at), flow.WithDeadline(at.Add(time.Millisecond))); err != nil {
		t.Fatalf("a deadline a millisecond after the run time: %v", err)
	}
}
