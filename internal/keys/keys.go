// Package keys builds every Redis key and channel name Sluice uses. No
// other Go code assembles key strings; the Lua prelude (lua/lib.lua) builds
// the per-job keys from the same prefix, and a test checks the two agree.
//
// All keys of one queue partition share the hash tag {ns:queue:partition},
// so every script touches a single cluster slot.
package keys

import (
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/names"
)

// Priorities is the number of priority levels (0..Priorities-1).
const Priorities = 10

// Partition names the keys of one partition of one queue.
type Partition struct {
	NS    string
	Queue string
	Index int
}

// Tag is the partition's cluster hash tag, braces included.
func (p Partition) Tag() string {
	return "{" + p.NS + ":" + p.Queue + ":" + strconv.Itoa(p.Index) + "}"
}

// Prefix is what every key of the partition starts with.
func (p Partition) Prefix() string { return p.Tag() + ":" }

// Job is the hash of one job.
func (p Partition) Job(id string) string { return p.Prefix() + "j:" + id }

// Errors is the list of a job's most recent errors.
func (p Partition) Errors(id string) string { return p.Prefix() + "e:" + id }

// Body is the string holding a job's payload when it is too long to keep
// in the job hash (lua/lib_chunks.lua, put_payload); the hash then has the
// field FieldPayloadBody instead of FieldPayload.
func (p Partition) Body(id string) string { return p.Prefix() + "b:" + id }

// Steps is the hash of a job's step checkpoints.
func (p Partition) Steps(id string) string { return p.Prefix() + "s:" + id }

// Kids is the hash of a parent's finished children.
func (p Partition) Kids(id string) string { return p.Prefix() + "k:" + id }

// KidCount is the hash counting a parent's finished (and failed) children
// per spawning step.
func (p Partition) KidCount(id string) string { return p.Prefix() + "kc:" + id }

// Unique is the key that holds a unique key for the job holding it (its
// ID in the partition), while it is active or for its TTL
// (lua/enqueue.lua).
func (p Partition) Unique(key string) string { return p.Prefix() + "uq:" + key }

// QuarantineHold names the quarantined job whose fingerprint (kind and
// arguments) is fp, while it is quarantined; HeldOn lists the jobs with
// that fingerprint held until it is released or deleted (lua/lib.lua
// free_held, flow.WithQuarantineHold).
func (p Partition) QuarantineHold(fp string) string { return p.Prefix() + "qh:" + fp }

// HeldOn is the list of jobs held behind the quarantined job of
// fingerprint fp; see QuarantineHold.
func (p Partition) HeldOn(fp string) string { return p.Prefix() + "qw:" + fp }

// HoldNext lists the other jobs of fingerprint fp quarantined while
// QuarantineHold named a job: when that job is released or deleted, the
// first of them still quarantined holds fp's copies in its place.
func (p Partition) HoldNext(fp string) string { return p.Prefix() + "qn:" + fp }

// Deaths is the sorted set of a partition's pending death reports: jobs
// that reached archived or quarantined and for which no death handler
// has run yet, scored by when a sweep may deliver them (lua/deaths.lua).
func (p Partition) Deaths() string { return p.Prefix() + "dd" }

// The kinds of key a script sets aside (Aside), and what names each.
const (
	// AsideJob is a job's key that held no job hash; the name is its ID.
	AsideJob = "j"
	// AsideShared is a key every job of the partition shares; the name
	// is the key's after Prefix (sched, stats, m:<minute>, outbox:dead).
	AsideShared = "k"
	// AsideList is a ready list or a worker's pin list; the name is the
	// whole key.
	AsideList = "list"
	// AsideLater is a bucket of later jobs; the name is the bucket.
	AsideLater = "later"
	// AsideCCWait is a concurrency key's wait list; the name is the key.
	AsideCCWait = "ccwait"
	// AsideRateWait is a rate class's wait list; the name is the class.
	AsideRateWait = "ratewait"
)

// Aside is where a script puts the n-th value (n >= 1) it found in a key
// of kind kind named name holding another type than Sluice writes there
// (corrupt data), so that the work goes on and the value is kept for the
// operator (lua/lib.lua set_aside): x:<kind>:<name>, then
// x:<kind>#<n>:<name>. The kind comes first and holds no ':' or '#', so
// no name of one kind or number is another's whatever a job ID holds (a
// job "list:a" is x:j:list:a, a ready list x:list:<key>), and a value set
// aside never replaces another: the script takes a free n. A family of
// its own, not a suffix of Job: a suffix could name another job's hash
// ("a" + ":x" is job "a:x"). Sluice never deletes these keys.
func (p Partition) Aside(kind, name string, n int) string {
	if n <= 1 {
		return p.Prefix() + "x:" + kind + ":" + name
	}
	return p.Prefix() + "x:" + kind + "#" + strconv.Itoa(n) + ":" + name
}

// Call is the record of a script call's reply by its call ID, which lets
// a re-sent call answer without running again (lua/lib_replay.lua).
func (p Partition) Call(id string) string { return p.Prefix() + "rc:" + id }

// FollowUp marks a follow-up job (flow.FollowUp) that a relay enqueued,
// so that relaying its outbox entry again never enqueues it twice, even
// once the job itself is deleted.
func (p Partition) FollowUp(id string) string { return p.Prefix() + "fu:" + id }

// NoteMark marks a child-finished notification delivered to this
// partition (lua/notify.lua): mark is the child's queue, partition and
// outbox entry ("queue:index:entry"), unique among every notification the
// partition receives. Kept as long as a relayed effect's marker.
func (p Partition) NoteMark(mark string) string { return p.Prefix() + "nm:" + mark }

// Watching is the set of the partition's jobs that a caller waits on
// (lua/watch.lua, flow.Client.Wait): a job is in it, with the field
// FieldWatched, from the first Wait until it finishes.
func (p Partition) Watching() string { return p.Prefix() + "wch" }

// DoneChannel is the pub/sub channel on which a watched job of the
// partition is announced when it finishes (lua/lib_lifecycle.lua finish):
// the message is its state, a space and its ID in the partition
// ("deleted" for a watched job an operator deleted before it finished).
// It is the partition's tag without its braces, then ":fin"
// ("ns:queue:0:fin"): one of the namespace's channels, "ns:*", which an
// ACL user confined to them may use.
func (p Partition) DoneChannel() string {
	return p.NS + ":" + p.Queue + ":" + strconv.Itoa(p.Index) + ":fin"
}

// Outbox is the stream of writes and notifications bound for other slots.
func (p Partition) Outbox() string { return p.Prefix() + "outbox" }

// DeadOutbox is the stream of outbox entries that could not be relayed
// (lua/deadfx.lua), kept until an operator sends them back or trims it.
func (p Partition) DeadOutbox() string { return p.Outbox() + ":dead" }

// Sched is the zset of scheduled and retryable jobs by due time.
func (p Partition) Sched() string { return p.Prefix() + "sched" }

// Later is the zset of the buckets of jobs due too far ahead for Sched,
// scored by bucket start (ms); LaterBucket(b) is the list of bucket b's
// job IDs (lua/lib_ready.lua sched_add).
func (p Partition) Later() string { return p.Prefix() + "later" }

// LaterBucket is the list of the job IDs of bucket b of Later.
func (p Partition) LaterBucket(b string) string { return p.Later() + ":" + b }

// Running is the zset of running jobs by lease expiry. Once a job has
// run it also holds RunAnchor.
func (p Partition) Running() string { return p.Prefix() + "run" }

// RunAnchor is a member of Running at +inf that is no job (an ID has no
// space): it keeps the zset encoded as a skiplist, whose inserts cost
// log n where a listpack's cost a scan (lua/lib_batch.lua RUN_ANCHOR).
const RunAnchor = "sluice: the anchor of the running index, which keeps it a skiplist; no job (lib_batch.lua)"

// Stats is the hash counting jobs per state.
func (p Partition) Stats() string { return p.Prefix() + "stats" }

// Available is the list of available jobs at one priority.
func (p Partition) Available(priority int) string {
	return p.Prefix() + "avail:" + strconv.Itoa(priority)
}

// Priorities is a bit mask (a string, bit i for priority i as SETBIT
// numbers them) of the priority lists above 0 that may hold jobs, so that
// a claim pops only those; lua/lib.lua keeps it. Missing means any may.
func (p Partition) Priorities() string { return p.Prefix() + "pm" }

// Terminal is the zset of jobs in a finished state, scored by the time
// they may be deleted: state is completed, archived, quarantined or
// cancelled.
func (p Partition) Terminal(state string) string { return p.Prefix() + state }

// Script is the KEYS list every script receives, in the order lua/lib.lua
// documents.
func (p Partition) Script() []string {
	ks := []string{
		p.Sched(), p.Running(),
		p.Terminal("completed"), p.Terminal("archived"),
		p.Terminal("quarantined"), p.Terminal("cancelled"),
		p.Stats(), p.Idle(),
	}
	for i := range Priorities {
		ks = append(ks, p.Available(i))
	}
	return append(ks, p.Outbox(), p.Concurrency(), p.RateWake(), p.Later())
}

// Idle is set while a worker waits for work on the partition: the next
// enqueue deletes it and publishes a wake-up.
func (p Partition) Idle() string { return p.Prefix() + "idle" }

// Concurrency is the hash of running jobs per concurrency key.
func (p Partition) Concurrency() string { return p.Prefix() + "cc" }

// RateWake is the sorted set of rate classes with waiting jobs, scored by
// when a token frees.
func (p Partition) RateWake() string { return p.Prefix() + "rwake" }

// EffectMark is the marker that an effect relayed from the outbox was
// applied. It lives in the same cluster slot as target, the key the effect
// writes; ok is false when no such name exists (target has a '}' but no
// valid hash tag).
func EffectMark(ns, target, id string) (string, bool) {
	m := ns + ":fx:{" + HashTag(target) + "}:" + id
	return m, Slot(m) == Slot(target)
}

// WakeChannel is the pub/sub channel on which idle workers of a queue learn
// that one of its partitions has work. The message is the partition index.
func WakeChannel(ns, queue string) string { return ns + ":wake:" + queue }

// PushChannel is a worker's own pub/sub channel, named by a random id, on
// which enqueues push it the jobs it offered to take (lua/lib_offer.lua).
// In the namespace, as the wake channels are: a Redis user confined to
// the namespace's channels may use it.
func PushChannel(ns, id string) string { return ns + ":push:" + id }

// Ref locates one job: its partition and its ID within the partition. Its
// string form, queue:partition:local, is the job ID users see; the
// namespace is the client's.
type Ref struct {
	Partition
	Local string
}

// String is the job ID users see.
func (r Ref) String() string {
	return r.Queue + ":" + strconv.Itoa(r.Index) + ":" + r.Local
}

// ChildLocal is the ID within its partition of the i-th child (from 0)
// that step spawned of the job whose ID within its partition is parent,
// enqueued at created (flow.Spawn): derived, so a spawn made again names
// the same children, and with the parent's creation time, as its commit
// names are (attempt.State.CommitName), so that a job given the ID of a
// deleted parent names other children than the old one's.
func ChildLocal(parent string, created time.Time, step string, i int) string {
	return parent + "@" + strconv.FormatInt(created.UnixMilli(), 36) + "~" + step + "~" + strconv.Itoa(i)
}

// LegacyChildLocal is ChildLocal as releases before 2026-12 derived it,
// without the parent's creation time: spawn checkpoints written then
// name children so.
func LegacyChildLocal(parent, step string, i int) string {
	return parent + "~" + step + "~" + strconv.Itoa(i)
}

// ValidQueue reports whether name may name a queue: 1 to 64 ASCII
// letters, digits, '_', '.' and '-', starting with a letter or a digit.
func ValidQueue(name string) bool { return names.Valid(name, 64, "_.-") }

// ParseRef reads a job ID written by Ref.String. It reports false when id
// is not of that form, a queue name that no queue can have included (such
// an ID is malformed, not the ID of a job that does not exist).
func ParseRef(ns, id string) (Ref, bool) {
	q, rest, ok := strings.Cut(id, ":")
	if !ok || !ValidQueue(q) {
		return Ref{}, false
	}
	ps, local, ok := strings.Cut(rest, ":")
	if !ok || local == "" || strings.ContainsFunc(local, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		// no job's ID has a space or a control character (flow.WithID
		// refuses them): one pasted with a trailing space is malformed,
		// not a job that is not found
		return Ref{}, false
	}
	idx, err := strconv.Atoi(ps)
	if err != nil || idx < 0 || strconv.Itoa(idx) != ps {
		return Ref{}, false
	}
	return Ref{Partition: Partition{NS: ns, Queue: q, Index: idx}, Local: local}, true
}
