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
	// NoSuspect says the worker runs a job with a crash on record: the
	// claim leases no other. Without it, a claim leases at most one
	// (lua/claim.lua).
	NoSuspect bool
	// Into is where the claim may decode the jobs it leases (from its
	// start, as far as it reaches): a caller done with the previous
	// claim's jobs passes their storage again, and claims allocate no job
	// structs. Jobs past its length are allocated.
	Into []Job
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
	// HeldSuspects says the claim passed over jobs with a crash on record
	// (NoSuspect, or one leased already) and was left short: claim again
	// soon, by the worker's clock.
	HeldSuspects bool
	Parked       []Parked
}

// Claim leases up to req.N ready jobs in one round trip.
func (s *Store) Claim(ctx context.Context, p keys.Partition, req ClaimRequest) (ClaimResult, error) {
	args := make([]any, 0, 6+2*len(req.KindLease))
	args = append(args, req.N, ms(req.Lease), req.Worker, req.Nonce, req.PromoteLimit, len(req.KindLease))
	for k, d := range req.KindLease {
		args = append(args, k, ms(d))
	}
	suspect := "1"
	if req.NoSuspect {
		suspect = "0"
	}
	args = append(args, suspect)
	v, err := s.run(ctx, lua.Claim, p, args...).Result()
	if err != nil {
		return ClaimResult{}, err
	}
	reply, ok := v.([]any)
	if !ok || len(reply) < 2 {
		return ClaimResult{}, fmt.Errorf("%w: claim reply %T", ErrMalformed, v)
	}
	var res ClaimResult
	nd, _ := reply[0].(int64)
	res.Dry, res.HeldSuspects, res.NextDue = claimDue(nd)
	parked, err := strs(reply[1])
	if err != nil {
		return res, err
	}
	for i := 0; i+1 < len(parked); i += 2 {
		res.Parked = append(res.Parked, Parked{Local: parked[i], Reason: parked[i+1]})
	}
	for rest := reply[2:]; len(rest) > 0; {
		var j *Job
		if i := len(res.Jobs); i < len(req.Into) {
			j = &req.Into[i]
		} else {
			j = new(Job)
		}
		if rest, err = decodeClaimed(j, rest, req.Worker); err != nil {
			return res, err
		}
		res.Jobs = append(res.Jobs, j)
	}
	return res, nil
}

// decodeClaimed reads the first job of the rest of a claim reply, and
// returns the rest after it: id, lease ID, lease expiry, fence, a count
// and that many step fields, a count and that many fields of the job hash
// before the claim (lua/claim.lua). It writes the job to j.
func decodeClaimed(j *Job, v []any, worker string) ([]any, error) {
	if len(v) < 6 {
		return nil, fmt.Errorf("%w: claimed job: %d elements", ErrMalformed, len(v))
	}
	id, _ := v[0].(string)
	lease, _ := v[1].(string)
	expiry, _ := v[2].(int64)
	fence, _ := v[3].(int64)
	steps, v, err := counted(v[4:])
	if err != nil {
		return nil, fmt.Errorf("claimed job %s: steps: %w", id, err)
	}
	flat, v, err := counted(v)
	if err != nil {
		return nil, fmt.Errorf("claimed job %s: fields: %w", id, err)
	}
	err = decodeJobInto(j, id, flat)
	if err == nil {
		err = evenStrings(steps)
	}
	if err != nil {
		// Leased all the same: the caller parks it (Job.Malformed), and the
		// rest of the claim runs.
		*j = Job{Local: id, Malformed: err}
	}
	j.State, j.Fence, j.Worker = "running", fence, worker
	j.LeaseID, j.LeaseExpiry = lease, time.UnixMilli(expiry)
	if j.Malformed != nil || len(steps) == 0 {
		return v, nil
	}
	if j.Steps == nil { // else it holds the timers of the job hash
		j.Steps = make(map[string][]byte, len(steps)/2)
	}
	for i := 0; i+1 < len(steps); i += 2 {
		k, _ := steps[i].(string)
		s, _ := steps[i+1].(string)
		j.Steps[k] = []byte(s)
	}
	return v, nil
}

// counted splits v into the elements its first element counts, and the
// rest after them.
func counted(v []any) (list, rest []any, err error) {
	if len(v) == 0 {
		return nil, nil, fmt.Errorf("%w: count missing", ErrMalformed)
	}
	n, ok := v[0].(int64)
	if !ok || n < 0 || n > int64(len(v)-1) {
		return nil, nil, fmt.Errorf("%w: bad count %v of %d elements", ErrMalformed, v[0], len(v)-1)
	}
	return v[1 : 1+n], v[1+n:], nil
}

// evenStrings checks that v is a flat list of field, value strings.
func evenStrings(v []any) error {
	if len(v)%2 != 0 {
		return fmt.Errorf("%w: odd field list", ErrMalformed)
	}
	for _, e := range v {
		if _, ok := e.(string); !ok {
			return fmt.Errorf("%w: field %T", ErrMalformed, e)
		}
	}
	return nil
}
