package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// ErrNoSchedule: no schedule of this name is known in Redis (no scheduler
// has run it yet). The schedule script's 'missing' status maps to it
// (status.go).
var ErrNoSchedule = sluicetype.ErrScheduleNotFound

// OwedMax is the most windows of owed ticks a schedule keeps: those due
// before a pause that no scheduler had decided when it was resumed, one
// window per pause. It is lua/schedule.lua's OWED_MAX
// (TestOwedMaxIsTheScript ties the two).
const OwedMax = 32

// ScheduleDef is what a scheduler publishes about a schedule, for
// operators: the listing, and TriggerSchedule, which enqueues Template.
type ScheduleDef struct {
	Name     string
	Cron     string        // a cron expression, or
	Every    time.Duration // a fixed interval
	TimeZone string
	Missed   string // the missed-run policy, as text
	Grace    time.Duration
	Queue    string
	Kind     string
	Template []byte // the job to enqueue, encoded by the caller
}

// ScheduleJob is the job a schedule's ticks enqueue, as its scheduler
// publishes it (ScheduleDef.Template, msgpack), with how the ticks' jobs
// are placed on their queue's partitions, so that an operator's trigger
// places its job where a tick's would be (admin.Client.TriggerSchedule).
type ScheduleJob struct {
	NewJob `msgpack:",inline"`
	// Route is the key the ticks' jobs are placed by (a partition key,
	// unique key or quarantine hold); "" for by their IDs.
	Route string `msgpack:"route,omitempty"`
	// Placed: the template says how its ticks are placed (Route, even
	// ""). A template of an older scheduler has neither field, and
	// nothing else tells: its unique key and hold are kept in NewJob, but
	// a partition key, which goes before them, is not.
	Placed bool `msgpack:"placed,omitempty"`
}

// Routed returns the key a trigger of the schedule is placed by ("": by
// its ID) and whether the template says (Placed, or a Route, which a
// scheduler of the release before Placed wrote alone).
func (j *ScheduleJob) Routed() (string, bool) {
	return j.Route, j.Placed || j.Route != ""
}

// ScheduleRecord is a schedule as stored: its definition and its state.
type ScheduleRecord struct {
	ScheduleDef
	Last   time.Time // the latest tick decided (enqueued or dropped)
	Ran    time.Time // the latest tick enqueued; zero: none yet
	Paused bool
}

// ScheduleSync is a schedule's state at store time Now.
type ScheduleSync struct {
	Now    time.Time
	Paused bool
	// (Last, Until] is the window of ticks a scheduler decides now, with a
	// claim from Last to Until (or to its latest tick when Until is Now):
	// Last is the latest tick decided and Until is Now; while the schedule
	// is paused Until is the pause's time (Last once the ticks before it
	// are decided); when a resume found ticks due before its pause
	// undecided, the window is theirs, apart from the last tick decided
	// (the resume's time). Until is never after Now.
	Last, Until time.Time
	// Later are the windows decided after (Last, Until], oldest first, as
	// (from, until] pairs: the other owed windows, then the one from the
	// last tick decided. A missed-run policy counts their ticks with the
	// window's, so that one outage with pauses in it is one outage.
	Later [][2]time.Time
	// Abandoned ticks were claimed by a scheduler that did not confirm them
	// in time; they are now this caller's to enqueue (again) and Ack.
	Abandoned []time.Time
}

func (s *Store) sched() keys.Schedules { return keys.Schedules{NS: s.cfg.NS} }

// runSchedule runs lua/schedule.lua on the schedule name, with a fresh
// call ID: a call sent again (go-redis, after a lost reply) carries the
// same one, which sync and claim recognise (lua/schedule.lua).
func (s *Store) runSchedule(ctx context.Context, name, op string, args ...any) (any, error) {
	now := ""
	if s.cfg.Now != nil {
		now = strconv.FormatInt(s.cfg.Now().UnixMilli(), 10)
	}
	ks := s.sched()
	argv := append(append([]any{now, ks.Prefix(), op}, args...), newCallID()+s.keep)
	kk := []string{ks.Schedule(name), ks.Pending(name)}
	if op == "delete" {
		kk = append(kk, ks.Names())
	}
	v, err := lua.Schedule.Run(ctx, s.rdb, kk, argv...).Result()
	if isReplyError(err) && strings.Contains(err.Error(), "WRONGTYPE") {
		// its record or its pending ticks hold another type than a hash
		// (written by hand): ErrMalformed naming it, as Schedule says,
		// not Redis's bare reply
		return nil, scheduleOfAnotherType(name, err)
	}
	return v, err
}

// PublishSchedule writes a schedule's definition (never its state) and adds
// it to the set of names, atomically.
func (s *Store) PublishSchedule(ctx context.Context, d ScheduleDef) error {
	ks := s.sched()
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, ks.Schedule(d.Name), "cron", d.Cron, "every", ms(d.Every), "tz", d.TimeZone,
			"missed", d.Missed, "grace", ms(d.Grace), "queue", d.Queue, "kind", d.Kind, "job", d.Template)
		p.SAdd(ctx, ks.Names(), d.Name)
		return nil
	})
	return err
}

// SyncSchedule reads a schedule's state, starting it at store time now if
// it has none, and hands over ticks claimed more than abandonAfter ago and
// never acknowledged.
func (s *Store) SyncSchedule(ctx context.Context, name string, abandonAfter time.Duration) (ScheduleSync, error) {
	// a re-send of it (go-redis, after a lost reply) is handed the ticks
	// its first run handed over
	v, err := s.runSchedule(ctx, name, "sync", ms(abandonAfter))
	if err != nil {
		return ScheduleSync{}, err
	}
	l, err := scheduleSync(name, v)
	if err != nil {
		return ScheduleSync{}, err
	}
	later, ok := l[5].([]any)
	if !ok || len(later)%2 != 0 {
		return ScheduleSync{}, fmt.Errorf("%w: schedule sync answered %v", ErrMalformed, v)
	}
	n := make([]int64, 0, len(l)-2+len(later))
	for _, e := range slices.Concat(l[1:5], later, l[6:]) {
		x, ok := e.(int64)
		if !ok {
			return ScheduleSync{}, fmt.Errorf("%w: schedule sync answered %v", ErrMalformed, v)
		}
		n = append(n, x)
	}
	st := ScheduleSync{Now: time.UnixMilli(n[0]), Last: time.UnixMilli(n[1]), Paused: n[2] == 1, Until: time.UnixMilli(n[3])}
	for i := 4; i < 4+len(later); i += 2 {
		st.Later = append(st.Later, [2]time.Time{time.UnixMilli(n[i]), time.UnixMilli(n[i+1])})
	}
	for _, t := range n[4+len(later):] {
		st.Abandoned = append(st.Abandoned, time.UnixMilli(t))
	}
	sort.Slice(st.Abandoned, func(i, j int) bool { return st.Abandoned[i].Before(st.Abandoned[j]) })
	return st, nil
}

// ClaimTicks moves a schedule's last tick from seen to last, and records
// ticks as pending, if no other scheduler moved it first and the schedule
// is not paused, or last is no later than the pause (the ticks due before
// a pause are still run). It returns Claimed, ClaimMoved or ClaimPaused.
func (s *Store) ClaimTicks(ctx context.Context, name string, seen, last time.Time, ticks []time.Time) (string, error) {
	// a re-send of it (go-redis, after a lost reply) is answered what its
	// first run answered; another scheduler's twin claim is not
	args := []any{seen.UnixMilli(), last.UnixMilli()}
	for _, t := range ticks {
		args = append(args, t.UnixMilli())
	}
	v, err := s.runSchedule(ctx, name, "claim", args...)
	if err != nil {
		return "", err
	}
	return scheduleClaim(name, v)
}

// AckTicks confirms claimed ticks: their jobs are added, or cannot be.
// ran is the latest of them whose job was added (zero: none was), which
// the schedule's record then shows as its latest run if it is later.
func (s *Store) AckTicks(ctx context.Context, name string, ticks []time.Time, ran time.Time) error {
	args := make([]any, 1, len(ticks)+1)
	if !ran.IsZero() {
		args[0] = ran.UnixMilli()
	} else {
		args[0] = ""
	}
	for _, t := range ticks {
		args = append(args, t.UnixMilli())
	}
	_, err := s.runSchedule(ctx, name, "ack", args...)
	return err
}

// PauseSchedule stops a schedule's ticks after store time now until
// ResumeSchedule; the ticks due before it are still run.
func (s *Store) PauseSchedule(ctx context.Context, name string) error {
	return s.simpleSchedule(ctx, name, "pause")
}

// ResumeSchedule restarts a paused schedule from store time now; ticks that
// fell while it was paused are not run, and those due before the pause
// that no scheduler decided yet still are. Resuming a running schedule
// does nothing.
func (s *Store) ResumeSchedule(ctx context.Context, name string) error {
	return s.simpleSchedule(ctx, name, "resume")
}

// ScheduleRunningWithin is how recently a scheduler must have synced a
// schedule (store time) for DeleteSchedule to take it as still running
// it: a scheduler syncs each of its schedules at least once a minute
// (flow's maxWait), and retries a failed round within 30 seconds.
const ScheduleRunningWithin = 5 * time.Minute

// ErrScheduleRunning: DeleteSchedule refused a schedule that a scheduler
// synced less than ScheduleRunningWithin ago, or that no scheduler of this
// release ever synced (one of an older release, which does not record its
// syncs, may run it): the scheduler would publish it again at its next
// round. Nothing was deleted.
var ErrScheduleRunning = errors.New("sluice: a scheduler still runs the schedule")

// DeleteSchedule deletes a schedule's record (definition and state), its
// pending ticks and its name, atomically; the jobs its ticks enqueued are
// left alone. Unless force, a schedule a scheduler still runs is refused
// with ErrScheduleRunning (lua/schedule.lua's 'delete'). A re-send of it
// (go-redis, after a lost reply) is answered what its first run answered.
func (s *Store) DeleteSchedule(ctx context.Context, name string, force bool) error {
	f := ""
	if force {
		f = "1"
	}
	v, err := s.runSchedule(ctx, name, "delete", f, ms(ScheduleRunningWithin), name)
	if err != nil {
		return err
	}
	return scheduleDeleted(name, v)
}

func (s *Store) simpleSchedule(ctx context.Context, name, op string) error {
	v, err := s.runSchedule(ctx, name, op)
	if err != nil {
		return err
	}
	return scheduleDone(name, op, v)
}

// Schedules reads every published schedule, sorted by name. A schedule
// whose record does not decode is left out, with an *EntryError for it in
// the error returned along with the others.
func (s *Store) Schedules(ctx context.Context) ([]ScheduleRecord, error) {
	ks := s.sched()
	names, err := s.rdb.SMembers(ctx, ks.Names()).Result()
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	cmds := make([]*redis.MapStringStringCmd, len(names))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = p.HGetAll(ctx, ks.Schedule(n))
		}
		return nil
	}); err != nil && !isReplyError(err) {
		return nil, err
	}
	out := make([]ScheduleRecord, 0, len(names))
	var bad []*EntryError
	for i, n := range names {
		if err := cmds[i].Err(); err != nil {
			bad = append(bad, &EntryError{Name: n, Err: scheduleOfAnotherType(n, err)})
			continue
		}
		m := cmds[i].Val()
		if len(m) == 0 {
			continue // deleted by hand
		}
		r, err := decodeSchedule(n, m)
		if err != nil {
			bad = append(bad, &EntryError{Name: n, Err: err})
			continue
		}
		out = append(out, r)
	}
	return out, joinEntries(bad)
}

// isReplyError reports whether err is what Redis answered a command with
// (WRONGTYPE, nil, ...), not an error of reaching it.
func isReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// scheduleOfAnotherType is err, Redis's reply (WRONGTYPE) to reading
// schedule name's record, which holds another type than a hash: the
// record is malformed (ErrMalformed, naming it).
func scheduleOfAnotherType(name string, err error) error {
	return fmt.Errorf("%w: schedule %q: %v", ErrMalformed, name, err)
}

// Schedule reads one published schedule; a record that does not decode,
// or holds another type than a hash, is ErrMalformed naming it, as
// Schedules says of it.
func (s *Store) Schedule(ctx context.Context, name string) (ScheduleRecord, error) {
	m, err := s.rdb.HGetAll(ctx, s.sched().Schedule(name)).Result()
	if isReplyError(err) {
		return ScheduleRecord{}, scheduleOfAnotherType(name, err)
	}
	if err != nil {
		return ScheduleRecord{}, err
	}
	if len(m) == 0 {
		return ScheduleRecord{}, fmt.Errorf("%w: %q", ErrNoSchedule, name)
	}
	return decodeSchedule(name, m)
}

func decodeSchedule(name string, m map[string]string) (ScheduleRecord, error) {
	num := func(f string) (int64, error) {
		if m[f] == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(m[f], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: schedule %q field %s: %q", ErrMalformed, name, f, m[f])
		}
		return n, nil
	}
	var n [4]int64
	for i, f := range []string{"every", "grace", "last", "ran"} {
		var err error
		if n[i], err = num(f); err != nil {
			return ScheduleRecord{}, err
		}
	}
	r := ScheduleRecord{
		ScheduleDef: ScheduleDef{
			Name: name, Cron: m["cron"], Every: time.Duration(n[0]) * time.Millisecond, TimeZone: m["tz"],
			Missed: m["missed"], Grace: time.Duration(n[1]) * time.Millisecond, Queue: m["queue"],
			Kind: m["kind"], Template: []byte(m["job"]),
		},
		Paused: m["paused"] == "1",
	}
	if n[2] > 0 {
		r.Last = time.UnixMilli(n[2])
	}
	if n[3] > 0 {
		r.Ran = time.UnixMilli(n[3])
	}
	return r, nil
}

// EnqueuedIn says where each of locals was enqueued among parts: the
// first partition (in parts' order) where its job is, or its enqueue's
// one-day marker (NewJob.Tick, keys.Partition.FollowUp) is; a local
// found nowhere is absent. A job added once, then again after its queue
// grew, would be placed by the new count on another partition than the
// first, where its ID meets nothing: a schedule's tick abandoned by a
// scheduler that died after enqueueing it and enqueued again by another,
// a spawn's children added by an attempt that failed before its step's
// checkpoint. Their second placement asks this first, over every
// partition of the queue. One pipelined round trip (EXISTS per key).
func (s *Store) EnqueuedIn(ctx context.Context, parts []keys.Partition, locals []string) (map[string]keys.Partition, error) {
	type probe struct {
		local string
		part  keys.Partition
		cmd   *redis.IntCmd
	}
	var probes []probe
	cmds, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, part := range parts {
			for _, l := range locals {
				probes = append(probes, probe{l, part, p.Exists(ctx, part.Job(l), part.FollowUp(l))})
			}
		}
		return nil
	})
	if err := pipeError(cmds); err != nil {
		return nil, err
	}
	out := map[string]keys.Partition{}
	for _, pr := range probes {
		if _, seen := out[pr.local]; !seen && pr.cmd.Val() > 0 {
			out[pr.local] = pr.part
		}
	}
	return out, nil
}
