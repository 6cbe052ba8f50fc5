package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/checkpoint"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/sluicetype"
)

// Job is a job hash as read from Redis.
type Job struct {
	Local string // ID within the partition
	// Malformed is set by Claim for a job it leased whose fields could not
	// be decoded; only Local and the lease fields are then set, and the
	// worker parks the job instead of running it.
	Malformed    error
	Kind         string
	Payload      []byte
	Headers      []byte
	State        string
	Priority     int
	Attempt      int // returned errors (and timeouts) so far
	CrashAttempt int // crashes (panics, lost leases) so far
	MaxAttempts  int
	Fence        int64
	LeaseID      string
	// LastLeaseID is the lease ID of its last claim as the hash keeps it,
	// whatever its state (LeaseID is empty unless it runs): with Fence and
	// Redrives, it names a death (DoneDeath)
	LastLeaseID string
	Worker      string
	LeaseStart  time.Time
	// Checkpointed: the claim that leased it answered checkpoints, so the
	// job is marked as having some (store.ModeOnceMarked); set by a claim
	// alone
	Checkpointed bool
	LeaseExpiry  time.Time
	Timeout      time.Duration
	Deadline     time.Time
	Created      time.Time
	RunAt        time.Time
	Finished     time.Time
	Reason       string // why it reached a terminal state, if it did
	LastError    string
	Result       []byte
	Orphan       sluicetype.Orphan
	Parent       string // the parent's job ID, for a spawned job
	WaitingFor   string // for a suspended parent: the spawning step it waits on
	WaitingCount int    // ... and how many of its children are not done
	// Suspended: the job is scheduled by a workflow's suspension (its
	// waits, lua/lib_waits.lua), waiting for AwaitingSignals (none for a
	// sleep) or its earliest timer.
	Suspended       bool
	AwaitingSignals []string
	// Steps holds the step checkpoints (record by step field), and the
	// durable timers (checkpoint.TimerPrefix fields of the job hash);
	// loaded with a claim.
	Steps map[string][]byte
	// Tracking is the last progress report, Stuck the last stuck-attempt
	// evidence (stuck.go); nil when none.
	Tracking *sluicetype.Tracking
	Stuck    *sluicetype.StuckInfo
	// Redrives counts the operator redrives (and releases) of the job;
	// RedrivenAt is the last one's time, RedrivenFrom its state:reason then.
	Redrives     int
	RedrivenAt   time.Time
	RedrivenFrom string
	// DeadEffects counts this job's effects that the relay could not apply
	// (lua/deadfx.lua).
	DeadEffects int
	// HeldBy is the quarantined job (its ID in the partition) this one is
	// held behind (NewJob.Hold), while it is.
	HeldBy string
	// PreferredWorker is the worker the job is routed to (NewJob.Sticky,
	// Reroute); "" when it is not pinned.
	PreferredWorker string
}

// errorRecord is one entry of a job's error list as lua/lib_lifecycle.lua
// writes it (JSON with one-letter names).
type errorRecord struct {
	Class        string `json:"k"`
	AtMillis     int64  `json:"t"`
	Attempt      int    `json:"a"`
	CrashAttempt int    `json:"c"`
	Message      string `json:"m"`
	Stack        string `json:"s"`
}

// decodeJob reads a flat HGETALL reply. Unknown fields are ignored, so newer
// writers do not break older readers.
func decodeJob(local string, reply []any) (*Job, error) {
	flat, err := strs(reply)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", local, err)
	}
	j := new(Job)
	if err := decodeJobInto(j, local, flat); err != nil {
		return nil, err
	}
	return j, nil
}

// decodeJobInto is decodeJob writing to j, every field of which it sets
// (to zero first, so nothing of a job decoded there before stays).
func decodeJobInto(j *Job, local string, flat []string) error {
	*j = Job{Local: local, MaxAttempts: DefaultMaxAttempts} // not stored for the default
	if len(flat)%2 != 0 {
		return fmt.Errorf("%w: odd field list for job %s", ErrMalformed, local)
	}
	var err error
	num := func(v string) int64 {
		n, e := strconv.ParseInt(v, 10, 64)
		if e != nil && err == nil {
			err = fmt.Errorf("%w: job %s: field is not a number: %q", ErrMalformed, local, v)
		}
		return n
	}
	ms := func(v string) time.Time { return time.UnixMilli(num(v)) }
	seen := false
	var payload, headers chunks
	var awaits string
	for i := 0; i < len(flat); i += 2 {
		k, v := flat[i], flat[i+1]
		switch k {
		case keys.FieldKind:
			j.Kind, seen = v, true
		case keys.FieldPayload:
			payload.add(0, v)
		case keys.FieldPayloadBody:
			// the payload is a key of its own, which the reader appends as
			// FieldPayload (lua/claim.lua, Store.Get); when that key is
			// missing the job reads with no payload, as one missing
			// FieldPayload does (a claim archives it as malformed)
		case keys.FieldHeaders:
			headers.add(0, v)
		case keys.FieldState:
			j.State = StateName(v)
		case keys.FieldPriority:
			j.Priority = int(num(v))
		case keys.FieldAttempt:
			j.Attempt = int(num(v))
		case keys.FieldCrashAttempt:
			j.CrashAttempt = int(num(v))
		case keys.FieldMaxAttempts:
			j.MaxAttempts = int(num(v))
		case keys.FieldFence:
			j.Fence = num(v)
		case keys.FieldLeaseID:
			j.LeaseID, j.LastLeaseID = v, v
		case keys.FieldWorker:
			j.Worker = v
		case keys.FieldLeaseStart:
			j.LeaseStart = ms(v)
		case keys.FieldLeaseExpiry:
			j.LeaseExpiry = ms(v)
		case keys.FieldRenewal:
			// the last renewal applied to the lease: the scripts' business
		case keys.FieldLaterLeft:
			// the bucket of later jobs it left early: the scheduled index's business
		case keys.FieldTimeout:
			j.Timeout = time.Duration(num(v)) * time.Millisecond
		case keys.FieldDeadline:
			j.Deadline = ms(v)
		case keys.FieldCreated:
			j.Created = ms(v)
		case keys.FieldRunAt:
			j.RunAt = ms(v)
		case keys.FieldFinished:
			j.Finished = ms(v)
		case keys.FieldReason:
			j.Reason = v
		case keys.FieldLastError:
			j.LastError = v
		case keys.FieldResult:
			j.Result = []byte(v)
		case keys.FieldOrphanHolder:
			j.Orphan.Holder = v
		case keys.FieldOrphanExpired:
			j.Orphan.ExpiredAt = ms(v)
		case keys.FieldOrphanCount:
			j.Orphan.Count = int(num(v))
		case keys.FieldParent:
			j.Parent = v
		case keys.FieldWaitStep:
			j.WaitingFor = v
		case keys.FieldWaitCount:
			j.WaitingCount = int(num(v))
		case keys.FieldAwaits:
			awaits = v
		case keys.FieldRedrives:
			j.Redrives = int(num(v))
		case keys.FieldRedrivenAt:
			j.RedrivenAt = ms(v)
		case keys.FieldRedrivenFrom:
			j.RedrivenFrom = v
		case keys.FieldDeadEffects:
			j.DeadEffects = int(num(v))
		case keys.FieldHeldBy:
			j.HeldBy = v
		case keys.FieldStickyWorker:
			j.PreferredWorker = v
		case keys.FieldHoldFingerprint:
			// the fingerprint of the quarantine hold: the scripts' business
		default:
			if strings.HasPrefix(k, checkpoint.TimerPrefix) { // a durable timer (lua/lib_waits.lua)
				if j.Steps == nil {
					j.Steps = make(map[string][]byte)
				}
				j.Steps[k] = []byte(v)
			} else if n, ok := chunkIndex(k, keys.FieldPayload); ok {
				payload.add(n, v)
			} else if n, ok := chunkIndex(k, keys.FieldHeaders); ok {
				headers.add(n, v)
			} else if e := decodeReport(j, k, v); e != nil && err == nil {
				err = e
			}
		}
	}
	if err != nil {
		return err
	}
	if j.Payload, err = payload.join(local, "payload"); err != nil {
		return err
	}
	if j.Headers, err = headers.join(local, "headers"); err != nil {
		return err
	}
	if !seen {
		return fmt.Errorf("%w: job %s has no kind", ErrMalformed, local)
	}
	if j.Created.IsZero() {
		// no FieldCreated: the job's generated ID carries its created time
		// (enqueue.lua, CT_SLACK)
		j.Created, _ = keys.LocalTime(local)
	}
	if j.State != "running" { // lease fields outlive the lease; they mean nothing now
		j.LeaseID, j.Worker, j.LeaseStart = "", "", time.Time{}
	} else if w, start, ok := LeaseHolder(j.LeaseID); ok {
		// the lease names them; the fields, if any, are an older
		// release's record of an earlier lease
		j.Worker, j.LeaseStart = w, start
	}
	if j.State == "scheduled" {
		j.Suspended, j.AwaitingSignals = awaitedSignals(awaits, j.Fence)
		if at := j.RunAt.UnixMilli(); at >= NeverDue || j.HeldBy != "" && at >= HeldDue {
			j.RunAt = time.Time{} // suspended on signals only, or held: never due as it is
		}
	}
	return nil
}

// addStep adds field k of the job's steps hash, with value v, to j.Steps,
// which holds the timers of its hash already. A timer there that reads
// stands: timers live in the job's hash, and in the steps hash only where
// an older release kept them, which suspend reads only when the job's
// hash holds none that reads (lua/lib_waits.lua). The wait must read the
// wake time suspend does, or the two disagree on whether it is due.
func (j *Job) addStep(k, v string) {
	if cur, ok := j.Steps[k]; ok {
		if _, _, reads := checkpoint.Timer(k, cur); reads {
			return
		}
	}
	j.Steps[k] = []byte(v)
}

// HeldByID is the job ID of the quarantined job j, of partition p, is
// held behind (HeldBy names it within the partition), or "".
func (j *Job) HeldByID(p keys.Partition) string {
	if j.HeldBy == "" {
		return ""
	}
	return keys.Ref{Partition: p, Local: j.HeldBy}.String()
}

// NeverDue is the due time (unix ms) of a job suspended on signals only
// (lua/lib_waits.lua FAR).
const NeverDue = 1 << 52

// HeldDue is the due time (unix ms) of a job held behind a quarantined
// job of its fingerprint (lua/lib_ready.lua HOLD_AT): never reached while
// the hold lasts.
const HeldDue = 99999999999999

// MinTime and MaxTime bound the times a job's fields keep (run time,
// deadline, a timer's wake time, a selector's bounds): past MaxTime a
// time would read back as NeverDue's "never", or, past Go's int64
// milliseconds, wrap into the past. Callers refuse times outside them.
var (
	MinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.UnixMilli(NeverDue - 1).UTC()
)

// TimeInRange reports whether t is within [MinTime, MaxTime].
func TimeInRange(t time.Time) bool { return !t.Before(MinTime) && !t.After(MaxTime) }

// awaitedSignals reads FieldAwaits ("<fence> name ..."): whether the job
// is suspended by the attempt of fence fence, and the signals it waits
// for; not suspended when an attempt ran since.
func awaitedSignals(v string, fence int64) (bool, []string) {
	f := strings.Fields(v)
	if len(f) == 0 || f[0] != strconv.FormatInt(fence, 10) {
		return false, nil
	}
	return true, f[1:]
}

func decodeErrorRecord(s string) (sluicetype.ErrorRecord, error) {
	var r errorRecord
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return sluicetype.ErrorRecord{}, fmt.Errorf("%w: error record: %v", ErrMalformed, err)
	}
	return sluicetype.ErrorRecord{
		Class: r.Class, At: time.UnixMilli(r.AtMillis), Attempt: r.Attempt, CrashAttempt: r.CrashAttempt,
		Message: r.Message, Stack: r.Stack,
	}, nil
}
