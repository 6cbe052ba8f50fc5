package store

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// ClaimRequest asks for up to N jobs of one partition.
type ClaimRequest struct {
	N            int
	Lease        time.Duration
	KindLease    map[string]time.Duration // per-kind lease overrides
	Worker       string
	Nonce        string // makes lease IDs unique: nonce.1, nonce.2, ...
	PromoteLimit int
}

// Parked is a job the claim moved to archived instead of running it.
type Parked struct {
	Local  string
	Reason string
}

// ClaimResult is what a claim leased.
type ClaimResult struct {
	Jobs []*Job
	// Dry reports that the partition ran out of ready jobs: fewer than N were
	// claimed. NextDue is then the earliest scheduled job's due time (zero:
	// none), and the partition will publish a wake-up on new work.
	Dry     bool
	NextDue time.Time
	Parked  []Parked
}

// Claim leases up to req.N ready jobs in one round trip.
func (s *Store) Claim(ctx context.Context, p keys.Partition, req ClaimRequest) (ClaimResult, error) {
	args := make([]any, 0, 6+2*len(req.KindLease))
	args = append(args, req.N, ms(req.Lease), req.Worker, req.Nonce, req.PromoteLimit, len(req.KindLease))
	for k, d := range req.KindLease {
		args = append(args, k, ms(d))
	}
	v, err := s.run(ctx, lua.Claim, p, args...).Result()
	if err != nil {
		return ClaimResult{}, err
	}
	reply, ok := v.([]any)
	if !ok || len(reply) < 2 {
		return ClaimResult{}, fmt.Errorf("%w: claim reply %T", ErrMalformed, v)
	}
	var res ClaimResult
	if nd, _ := reply[0].(int64); nd != -2 {
		res.Dry = true
		res.NextDue = timeOrZero(nd)
	}
	parked, err := strs(reply[1])
	if err != nil {
		return res, err
	}
	for i := 0; i+1 < len(parked); i += 2 {
		res.Parked = append(res.Parked, Parked{Local: parked[i], Reason: parked[i+1]})
	}
	for _, e := range reply[2:] {
		j, err := decodeClaimed(e, req.Worker)
		if err != nil {
			return res, err
		}
		res.Jobs = append(res.Jobs, j)
	}
	return res, nil
}

// decodeClaimed reads one job of a claim reply:
// { id, lease ID, lease expiry, fence, steps, job hash before the claim }.
func decodeClaimed(e any, worker string) (*Job, error) {
	v, ok := e.([]any)
	if !ok || len(v) != 6 {
		return nil, fmt.Errorf("%w: claimed job %T", ErrMalformed, e)
	}
	id, _ := v[0].(string)
	lease, _ := v[1].(string)
	expiry, _ := v[2].(int64)
	fence, _ := v[3].(int64)
	flat, ok := v[5].([]any)
	if !ok {
		return nil, fmt.Errorf("%w: claimed job %s: fields %T", ErrMalformed, id, v[5])
	}
	j, err := decodeJob(id, flat)
	steps, serr := strs(v[4])
	if err == nil {
		err = serr
	}
	if err != nil {
		// Leased all the same: the caller parks it (Job.Malformed), and the
		// rest of the claim runs.
		j = &Job{Local: id, Malformed: err}
	}
	j.State, j.Fence, j.Worker = "running", fence, worker
	j.LeaseID, j.LeaseExpiry = lease, time.UnixMilli(expiry)
	if j.Malformed != nil {
		return j, nil
	}
	if len(steps) > 0 {
		j.Steps = make(map[string][]byte, len(steps)/2)
		for i := 0; i+1 < len(steps); i += 2 {
			j.Steps[steps[i]] = []byte(steps[i+1])
		}
	}
	return j, nil
}
