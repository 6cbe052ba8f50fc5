package store

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// Lease is one attempt's identity: the job, its lease ID and fence.
type Lease struct {
	Local   string
	LeaseID string
	Fence   int64
}

// Renewal asks to extend one lease by Duration from now (store time).
type Renewal struct {
	Lease
	Duration time.Duration
}

// Lost is a lease that is no longer held, with the job's current state
// ("" when the job is gone).
type Lost struct {
	LeaseID string
	State   string
}

// Renew extends leases of one partition in one round trip and reports the
// ones that are lost.
func (s *Store) Renew(ctx context.Context, p keys.Partition, rs []Renewal) ([]Lost, error) {
	args := make([]any, 0, 1+4*len(rs))
	args = append(args, len(rs))
	for _, r := range rs {
		args = append(args, r.Local, r.LeaseID, r.Fence, ms(r.Duration))
	}
	v, err := s.run(ctx, lua.Renew, p, args...).Result()
	if err != nil {
		return nil, err
	}
	flat, err := strs(v)
	if err != nil {
		return nil, err
	}
	var lost []Lost
	for i := 0; i+1 < len(flat); i += 2 {
		lost = append(lost, Lost{LeaseID: flat[i], State: flat[i+1]})
	}
	return lost, nil
}

// Reaped is a job reclaimed from an expired lease.
type Reaped struct {
	Local  string
	State  string // available or quarantined
	Holder string // the worker that lost it
}

// Reap reclaims up to limit jobs of one partition whose lease expired.
func (s *Store) Reap(ctx context.Context, p keys.Partition, limit int) ([]Reaped, error) {
	v, err := s.run(ctx, lua.Reap, p, limit).Result()
	if err != nil {
		return nil, err
	}
	flat, err := strs(v)
	if err != nil {
		return nil, err
	}
	var out []Reaped
	for i := 0; i+2 < len(flat); i += 3 {
		out = append(out, Reaped{Local: flat[i], State: flat[i+1], Holder: flat[i+2]})
	}
	return out, nil
}

// Promote makes up to limit due jobs of one partition available and returns
// how many it moved and the next due time (zero: none).
func (s *Store) Promote(ctx context.Context, p keys.Partition, limit int) (int, time.Time, error) {
	v, err := s.run(ctx, lua.Promote, p, limit).Result()
	if err != nil {
		return 0, time.Time{}, err
	}
	r, _ := v.([]any)
	if len(r) != 2 {
		return 0, time.Time{}, ErrMalformed
	}
	n, _ := r[0].(int64)
	nd, _ := r[1].(int64)
	return int(n), timeOrZero(nd), nil
}

// Sweep deletes up to limit jobs per terminal state whose retention passed.
func (s *Store) Sweep(ctx context.Context, p keys.Partition, limit int) (int, error) {
	n, err := s.run(ctx, lua.Sweep, p, limit).Int()
	return n, err
}
