package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// Stored sizes of stuck evidence: longer texts are cut.
const (
	StuckWhyMax   = 1 << 10
	StuckStackMax = 16 << 10
)

// Stuck records r on the job of l. It reports false when the job no
// longer belongs to that attempt (nothing was written).
func (s *Store) Stuck(ctx context.Context, p keys.Partition, l Lease, r sluicetype.StuckInfo) (bool, error) {
	n, err := s.run(ctx, lua.Stuck, p, l.Local, l.LeaseID, l.Fence, r.Case, cut(r.Why, StuckWhyMax),
		unixMS(r.Since), r.Step, cut(r.Cursor, StuckWhyMax), cut(r.Stack, StuckStackMax)).Int()
	return n == 1, err
}

// ProgressReport is one running attempt's report of what it is doing.
type ProgressReport struct {
	Lease
	Percent float64
	State   string
}

// Progress records reports of running attempts of one partition in one
// round trip; written[i] is false when report i's attempt no longer holds
// its job.
func (s *Store) Progress(ctx context.Context, p keys.Partition, rs []ProgressReport) (written []bool, err error) {
	args := make([]any, 0, 1+5*len(rs))
	args = append(args, len(rs))
	for _, r := range rs {
		args = append(args, r.Local, r.LeaseID, r.Fence, strconv.FormatFloat(r.Percent, 'f', -1, 64), r.State)
	}
	v, err := s.run(ctx, lua.Progress, p, args...).Result()
	if err != nil {
		return nil, err
	}
	flat, err := strs(v)
	if err != nil || len(flat) != len(rs) {
		return nil, fmt.Errorf("%w: progress reply %v", ErrMalformed, v)
	}
	written = make([]bool, len(rs))
	for i, f := range flat {
		written[i] = f == "1"
	}
	return written, nil
}

// cut shortens s to at most n bytes.
func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// decodeReport reads the job fields of stuck evidence (keys.FieldStuck*)
// and progress reports (keys.FieldTrack*); other fields are ignored.
func decodeReport(j *Job, k, v string) error {
	var (
		n   int64
		err error
	)
	switch k {
	case keys.FieldStuckFence, keys.FieldStuckSince, keys.FieldStuckAt, keys.FieldTrackFence, keys.FieldTrackAt:
		n, err = strconv.ParseInt(v, 10, 64)
	case keys.FieldTrackPercent:
		var f float64
		f, err = strconv.ParseFloat(v, 64)
		j.tracking().Percent = f
	}
	if err != nil {
		return fmt.Errorf("%w: job %s: field %s is not a number: %q", ErrMalformed, j.Local, k, v)
	}
	switch k {
	case keys.FieldStuckCase:
		j.stuck().Case = v
	case keys.FieldStuckLeaseID:
		j.stuck().LeaseID = v
	case keys.FieldStuckFence:
		j.stuck().Fence = n
	case keys.FieldStuckWhy:
		j.stuck().Why = v
	case keys.FieldStuckSince:
		j.stuck().Since = timeOrZero(n)
	case keys.FieldStuckAt:
		j.stuck().At = time.UnixMilli(n)
	case keys.FieldStuckStep:
		j.stuck().Step = v
	case keys.FieldStuckCursor:
		j.stuck().Cursor = v
	case keys.FieldStuckStack:
		j.stuck().Stack = v
	case keys.FieldTrackState:
		j.tracking().State = v
	case keys.FieldTrackAt:
		j.tracking().At = time.UnixMilli(n)
	case keys.FieldTrackFence:
		j.tracking().Fence = n
	}
	return nil
}

func (j *Job) stuck() *sluicetype.StuckInfo {
	if j.Stuck == nil {
		j.Stuck = &sluicetype.StuckInfo{}
	}
	return j.Stuck
}

func (j *Job) tracking() *sluicetype.Tracking {
	if j.Tracking == nil {
		j.Tracking = &sluicetype.Tracking{}
	}
	return j.Tracking
}
