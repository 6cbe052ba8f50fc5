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
	N         int
	Lease     time.Duration
	KindLease map[string]time.Duration // per-kind lease overrides
	Worker    string
	Nonce     string // makes lease IDs unique: nonce.1, nonce.2+, ... (lua/claim.lua: + marks a plain job)
	// ID, when set, names the call (with Worker): the same request sent
	// again under it, after an error that may have lost the reply of a
	// claim Redis ran, is answered the jobs that claim leased, not left
	// leased to no one until the leases end. Its record is kept for
	// Lease, or the store's keep if longer, or the longest lease the
	// claim made (a KindLease) if longer still: the caller may send it
	// again for as long. Empty: a new call.
	ID           string
	PromoteLimit int
	// NoSuspect says the worker runs a job with a crash on record: the
	// claim leases no other. Without it, a claim leases at most one
	// (lua/claim.lua).
	NoSuspect bool
	// Offer, above 0, has a claim that runs dry leave an offer of up to
	// Offer jobs (no more than it left unfilled) for OfferFor: until a
	// job is listed there, enqueues lease plain jobs to this worker
	// themselves and publish them on OfferChannel, a pick-up in one hop
	// (lua/lib_offer.lua, DecodePush). No offer is made when the channel,
	// the nonce or a kind of KindLease holds a space.
	Offer        int
	OfferChannel string
	OfferFor     time.Duration
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
	// Dry reports that the partition ran out of ready jobs: fewer than N
	// were claimed, and the partition will publish a wake-up on new work.
	// Scheduled says something in it comes due later (a scheduled job, a
	// rate token, a sticky fallback): NextDue after the claim ran, in
	// store time (0: due already). A delay, not a time: the caller adds it
	// to the time it sent the claim by its own clock, which may be off
	// from Redis's.
	Dry       bool
	Scheduled bool
	NextDue   time.Duration
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
	if offer := req.offer(); offer != "" {
		args = append(args, req.Offer, ms(req.OfferFor), offer)
	}
	call := newCallID() + s.keep
	if req.ID != "" {
		id := newContentID()
		id.add(req.Worker)
		id.add(req.ID)
		// the caller sends a claim again under its ID for up to its
		// longest lease (runtime's resendFor), which may outlast the
		// store's keep: a re-send past its record would run as a new
		// claim, and the jobs the first run leased would stay leased to
		// no attempt until reaped, each charged a crash. So the record is
		// kept for Lease at least, and claim.lua keeps it for the longest
		// lease it made when that is longer (a KindLease): a claim of
		// short leases alone is not kept as long as the longest kind's.
		// Its record holds only IDs. Unlike an ack's (Ack.Resend), it
		// needs no keep on top for go-redis's re-sends of the last try:
		// once the leases it made have run out, its replay would answer
		// none of them, and a run anew leases afresh, its reply reaching
		// the worker, which hands back what it may not run.
		keep := s.keep
		if req.Lease > s.keepFor {
			keep = keepSuffix(req.Lease)
		}
		call = id.call() + keep
	}
	v, err := s.sendKept(ctx, lua.Claim, call, append(s.callArgs(p, len(args)), args...)).Result()
	if err != nil {
		return ClaimResult{}, err
	}
	reply, ok := v.([]any)
	if !ok || len(reply) < 2 {
		return ClaimResult{}, fmt.Errorf("%w: claim reply %T", ErrMalformed, v)
	}
	var res ClaimResult
	nd, _ := reply[0].(int64)
	res.Dry, res.HeldSuspects, res.Scheduled, res.NextDue = claimDue(nd)
	parked, err := strs(reply[1])
	if err != nil {
		return res, err
	}
	for i := 0; i+1 < len(parked); i += 2 {
		res.Parked = append(res.Parked, Parked{Local: parked[i], Reason: parked[i+1]})
	}
	if len(reply) < 3 {
		return res, nil
	}
	packed, ok := reply[2].(string)
	if !ok {
		return res, fmt.Errorf("%w: claimed jobs %T", ErrMalformed, reply[2])
	}
	res.Jobs, err = decodeLeased(packed, req.Into, req.Worker)
	return res, err
}

// decodeLeased reads jobs leased to worker, packed as a claim answers them
// (lua/claim.lua), into into as far as it reaches, then into new jobs. A
// big reply's strings are copied out: read in place, one job's ID would
// keep every payload of its claim in memory while it runs.
func decodeLeased(packed string, into []Job, worker string) ([]*Job, error) {
	u := unpacker{s: packed, own: len(packed) > sharedReplyMax}
	var (
		jobs   []*Job
		fields []string // one job's at a time
	)
	for range u.list() {
		var j *Job
		if i := len(jobs); i < len(into) {
			j = &into[i]
		} else {
			j = new(Job)
		}
		fields = decodeClaimed(j, &u, fields, worker)
		if u.err != nil {
			return jobs, u.err
		}
		jobs = append(jobs, j)
	}
	if u.i != len(packed) && u.err == nil {
		u.fail("%d bytes after the jobs", len(packed)-u.i)
	}
	return jobs, u.err
}

// decodeClaimed reads one leased job of a claim's packed reply into j: a
// list of id, lease ID, lease expiry, fence, steps, fields, body
// (lua/claim.lua). fields is storage for the job's fields, returned for
// the next job. A job that does not decode is leased all the same: j says
// so (Job.Malformed), the caller parks it and the rest of the claim runs.
func decodeClaimed(j *Job, u *unpacker, fields []string, worker string) []string {
	if n := u.list(); n != 7 {
		u.fail("claimed job: %d elements", n)
		return fields
	}
	id, lease := u.str(), u.str()
	expiry, fence := u.int(), u.int()
	steps := u.strs(nil)
	fields = u.strs(fields)
	if body, ok := u.strOrFalse(); ok {
		fields = append(fields, keys.FieldPayload, body)
	}
	if u.err != nil {
		return fields
	}
	err := decodeJobInto(j, id, fields)
	if err == nil && len(steps)%2 != 0 {
		err = fmt.Errorf("%w: odd step list", ErrMalformed)
	}
	if err != nil {
		*j = Job{Local: id, Malformed: err}
	}
	// the fields read are the job's before the claim (after it, for a
	// re-sent claim): its lease is the one the claim gave it
	j.State, j.Fence, j.Worker = "running", fence, worker
	j.LeaseID, j.LeaseExpiry, j.LeaseStart = lease, time.UnixMilli(expiry), time.Time{}
	// a claim reads a job's checkpoints only when the job is marked as
	// having some (lua/claim.lua)
	j.Checkpointed = len(steps) > 0
	if j.Malformed != nil || len(steps) == 0 {
		return fields
	}
	if j.Steps == nil { // else it holds the timers of the job hash
		j.Steps = make(map[string][]byte, len(steps)/2)
	}
	for i := 0; i+1 < len(steps); i += 2 {
		j.addStep(steps[i], steps[i+1])
	}
	return fields
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
