package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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

// leaseMax is the longest lease ID LeaseHolder reads, as lua/lib.lua's
// lease_of: a worker ID's 128 bytes and a nonce are a few hundred.
const leaseMax = 1024

// LeaseHolder reads the worker and the lease start (store time) a lease
// ID names: a claim writes it worker/start/nonce.i, then a mark (a push
// nonce.p<k>; lua/lib.lua lease_of). ok is false for a lease ID of
// another shape: an older release's, whose job hash holds the two as
// fields (keys.FieldWorker, keys.FieldLeaseStart).
func LeaseHolder(lease string) (worker string, start time.Time, ok bool) {
	last := strings.LastIndexByte(lease, '/')
	if last < 0 || len(lease) > leaseMax {
		return "", time.Time{}, false
	}
	at := strings.LastIndexByte(lease[:last], '/')
	if at < 1 {
		return "", time.Time{}, false
	}
	ms, err := strconv.ParseUint(lease[at+1:last], 10, 63)
	if err != nil {
		return "", time.Time{}, false
	}
	return lease[:at], time.UnixMilli(int64(ms)), true
}

// LeaseNonce is the nonce of the claim (or offer) that gave lease ID
// lease: the part between its start and its place in the call.
func LeaseNonce(lease string) string {
	lease = lease[strings.LastIndexByte(lease, '/')+1:]
	if i := strings.LastIndexByte(lease, '.'); i >= 0 {
		return lease[:i]
	}
	return ""
}

// Renewal asks to extend one lease by Duration from now (store time).
// Seq numbers the renewals of one attempt in the order they are sent,
// from 1 (0: unnumbered, always applied): a renewal numbered no higher
// than one already applied to the attempt moves nothing and answers the
// lease held (lua/renew.lua). So a renewal that reaches Redis late, a
// re-send after a lost reply or a call that timed out on its way, cannot
// set the lease back to a duration its worker has since changed.
type Renewal struct {
	Lease
	Duration time.Duration
	Seq      int64
}

// Lost is a lease that is no longer held, with the job's current state
// ("" when the job is gone).
type Lost struct {
	LeaseID string
	State   string
}

// Renew extends leases of one partition in one round trip and reports the
// ones that are lost, and the lease IDs of the renewals that moved nothing
// (late): a renewal of the attempt numbered at least as high ran first
// (Renewal.Seq), and the lease ends as that one set it, still held.
func (s *Store) Renew(ctx context.Context, p keys.Partition, rs []Renewal) (lost []Lost, late []string, err error) {
	args := make([]any, 0, 1+5*len(rs))
	args = append(args, len(rs))
	for _, r := range rs {
		args = append(args, r.Local, r.LeaseID, r.Fence, ms(r.Duration), r.Seq)
	}
	v, err := s.run(ctx, lua.Renew, p, args...).Result()
	if err != nil {
		return nil, nil, err
	}
	list, ok := v.([]any)
	if !ok {
		return nil, nil, fmt.Errorf("%w: renew answered %T, want a list", ErrMalformed, v)
	}
	for i := 0; i+1 < len(list); i += 2 {
		id, _ := list[i].(string)
		// late is a number: a state, even a corrupt one, is a string
		if n, ok := list[i+1].(int64); ok && n == statusLate {
			late = append(late, id)
			continue
		}
		state, ok := list[i+1].(string)
		if !ok {
			return nil, nil, fmt.Errorf("%w: renew answered %T for the state of lease %s", ErrMalformed, list[i+1], id)
		}
		lost = append(lost, Lost{LeaseID: id, State: state})
	}
	return lost, late, nil
}

// Reaped is a job reclaimed from an expired lease.
type Reaped struct {
	Local  string
	State  string // retryable, available or quarantined; archived when its crash counter is corrupt
	Holder string // the worker that lost it
}

// Maintenance is what one Maintain call did.
type Maintenance struct {
	Reaped   []Reaped
	Promoted int // due jobs made available
	Deleted  int // finished jobs deleted, their retention passed
}

// Maintain makes one maintenance pass over a partition in one call
// (lua/maintain.lua): it reclaims up to reapLimit jobs whose lease expired,
// makes up to promoteLimit due jobs available, and deletes up to
// sweepLimit finished jobs per terminal state whose retention passed. A
// limit of 0 skips that part.
func (s *Store) Maintain(ctx context.Context, p keys.Partition, reapLimit, promoteLimit, sweepLimit int) (Maintenance, error) {
	return s.maintain(ctx, p, reapLimit, promoteLimit, sweepLimit)
}

// maintain is Maintain, with the workers whose pin lists to index
// (IndexPinLists) as maintain.lua's last arguments.
func (s *Store) maintain(ctx context.Context, p keys.Partition, reapLimit, promoteLimit, sweepLimit int, pins ...any) (Maintenance, error) {
	args := append([]any{reapLimit, promoteLimit, sweepLimit, ms(s.cfg.CrashDelay)}, pins...)
	v, err := s.run(ctx, lua.Maintain, p, args...).Result()
	if err != nil {
		return Maintenance{}, err
	}
	r, _ := v.([]any)
	if len(r) != 3 {
		return Maintenance{}, fmt.Errorf("%w: maintain answered %v", ErrMalformed, v)
	}
	flat, err := strs(r[0])
	if err != nil {
		return Maintenance{}, err
	}
	var m Maintenance
	for i := 0; i+2 < len(flat); i += 3 {
		m.Reaped = append(m.Reaped, Reaped{Local: flat[i], State: flat[i+1], Holder: flat[i+2]})
	}
	promoted, ok1 := r[1].(int64)
	deleted, ok2 := r[2].(int64)
	if !ok1 || !ok2 {
		return Maintenance{}, fmt.Errorf("%w: maintain answered %v", ErrMalformed, v)
	}
	m.Promoted, m.Deleted = int(promoted), int(deleted)
	return m, nil
}
