package admin

import (
	"context"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
)

// Bounds of ListJobs.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
)

// ListOptions choose the jobs ListJobs returns.
type ListOptions struct {
	Queue string // required
	State string // required: one of flow.States
	Kind  string // "" for any kind
	// Limit is the page size. Default DefaultListLimit, at most
	// MaxListLimit.
	Limit int
	// Cursor continues a listing: the Next of the previous page.
	Cursor string
}

// JobPage is one page of a listing.
type JobPage struct {
	// Jobs hold the fields a listing reads: not Payload, Result, Errors,
	// Steps, Tracking or Stuck (read those with Job).
	Jobs []flow.JobInfo
	// Next is the cursor of the next page; "" when there are no more.
	Next string
}

// ListJobs lists the jobs of a queue (all its partitions) in one state,
// newest first: running jobs by lease expiry, scheduled and retryable ones
// by due time, finished ones by finish time (their deletion time, to be
// exact: finish time plus retention), each latest first; available jobs by
// priority (highest first), then latest enqueued first, then the available
// jobs pinned to a worker (sticky routing; its worker live or gone),
// worker by worker in the order of their names, each latest first.
//
// Memory and Redis time are bounded by the page: each script call reads at
// most a few thousand entries of one partition, and a page needs one or a
// few calls per partition. A page of running, scheduled, retryable or
// finished jobs goes on from the score (lease expiry, due time, deletion
// time) where the last one stopped, so jobs that reach the state between
// pages at another score shift nothing; among jobs of the very score
// where the last page stopped (held jobs and jobs suspended on signals
// alone share one, jobs claimed together a lease expiry) it goes on after
// the last job shown, by ID, so such jobs leaving shift nothing either
// (one arriving is listed if its ID sorts after). A page of available jobs goes on
// from a position counted from the newest, which jobs enqueued between
// pages shift (a page may then repeat jobs of the one before). Jobs that
// change state between pages may be skipped or seen twice; an available
// job that was cancelled and redriven while still listed may appear twice. Available
// jobs parked on a concurrency key's or rate class's wait list are counted
// by QueueStats but not listed.
func (c *Client) ListJobs(ctx context.Context, o ListOptions) (JobPage, error) {
	if !runtime.ValidQueue(o.Queue) {
		return JobPage{}, fmt.Errorf("%w: queue %q", flow.ErrInvalid, o.Queue)
	}
	if !validState(o.State) {
		return JobPage{}, fmt.Errorf("%w: state %q (want one of %s)", flow.ErrInvalid, o.State, strings.Join(flow.States, ", "))
	}
	if err := kindOK(o.Kind); err != nil {
		return JobPage{}, err
	}
	if o.Limit < 0 || o.Limit > MaxListLimit {
		return JobPage{}, fmt.Errorf("%w: limit %d not in 1..%d", flow.ErrInvalid, o.Limit, MaxListLimit)
	}
	if o.Limit == 0 {
		o.Limit = DefaultListLimit
	}
	parts, err := c.b.Partitions(ctx, o.Queue)
	if err != nil {
		return JobPage{}, err
	}
	tag := cursorTag(o.Queue, o.State, o.Kind)
	streams, err := parseCursor(o.Cursor, tag, o.State, parts)
	if err != nil {
		return JobPage{}, err
	}
	if o.State == flow.StateAvailable {
		for _, s := range streams {
			if err := c.b.Store.IndexPinLists(ctx, s.p); err != nil {
				return JobPage{}, err
			}
		}
	}
	budget := min(max(4*o.Limit, 1000), 5000)
	fill := func(s *stream) error {
		for len(s.buf) == 0 && !s.done {
			page, err := c.b.Store.List(ctx, s.p, o.State, s.next, o.Limit, budget, o.Kind)
			if err != nil {
				return err
			}
			s.buf, s.next, s.done = page.Entries, page.Next, page.Next == ""
		}
		return nil
	}
	var out JobPage
	for len(out.Jobs) < o.Limit {
		var best *stream
		for _, s := range streams {
			if err := fill(s); err != nil {
				return JobPage{}, err
			}
			if len(s.buf) > 0 && (best == nil || s.buf[0].Key > best.buf[0].Key) {
				best = s
			}
		}
		if best == nil {
			break
		}
		e := best.buf[0]
		best.buf = best.buf[1:]
		best.resume = e.After
		if len(best.buf) == 0 {
			best.resume = best.next
		}
		out.Jobs = append(out.Jobs, summary(best.p, e.Job))
	}
	if next := formatCursor(streams); next != "" {
		out.Next = tag + cursorTagEnd + next
	}
	return out, nil
}

// stream is one partition's part of a listing.
type stream struct {
	p      keys.Partition
	buf    []store.ListEntry // read, not yet returned
	next   string            // the partition's cursor after buf
	done   bool              // nothing after buf
	resume string            // where the next page starts
}

// A listing cursor holds one cursor per partition, joined by ','; "-"
// marks a partition with nothing more.
const cursorDone = "-"

// cursorForms are the forms of a partition's cursor, by state: a score,
// the entries of that score examined and the last of them (running and
// finished states), a
// part of the scheduled index and a place in it, a priority and an offset
// (lua/list.lua), or a worker's pin list (in hex) and an offset.
var cursorForms = map[string]*regexp.Regexp{
	flow.StateScheduled: regexp.MustCompile(`^(?:[fn]` + scoreForm + `:\d{1,15}` + memberForm + `|b\d{1,15}\.\d{1,15})$`),
	flow.StateAvailable: regexp.MustCompile(`^(?:\d|p(?:[0-9a-f]{2}){1,128})\.\d{1,15}$`),
	"":                  regexp.MustCompile(`^` + scoreForm + `:\d{1,15}` + memberForm + `$`),
}

// memberForm is the member of the last entry examined, in hex, which a
// cursor names so that a page goes on among entries of one score after
// some of them left (a cursor of an earlier version has none).
const memberForm = `(?::(?:[0-9a-f]{2}){1,128})?`

// scoreForm is a sorted set score as Redis (or miniredis) writes it: a
// number, or an infinity (a corrupt due time is listed at one).
const scoreForm = `(?:[-+]?inf|-?\d{1,20}(?:\.\d{1,20})?(?:[eE][-+]?\d{1,3})?)`

// cursorTag names a listing (queue, state, kind) in its cursors: a
// cursor of another listing of the same form (another finished state,
// queue or kind, over as many partitions) read as this one's place
// listed the wrong jobs, or none, and said so as if it were the end.
func cursorTag(queue, state, kind string) string {
	h := fnv.New32a()
	h.Write([]byte(queue + "\x00" + state + "\x00" + kind))
	return fmt.Sprintf("%08x", h.Sum32())
}

// cursorTagEnd ends a cursor's tag; no partition's cursor has one.
const cursorTagEnd = "_"

// parseCursor reads the cursor c of the listing tag (cursorTag) of state
// over parts. A cursor that is not one this listing gave is ErrInvalid:
// read as a start, or by the script, it listed the wrong jobs, or none.
// A cursor with no tag is of an earlier version, taken as it was.
func parseCursor(c, tag, state string, parts []keys.Partition) ([]*stream, error) {
	cs := make([]string, len(parts))
	if t, rest, ok := strings.Cut(c, cursorTagEnd); ok {
		if t != tag {
			return nil, fmt.Errorf("%w: cursor %q is another listing's (another queue, state or kind): give it to the listing that gave it, or start over", flow.ErrInvalid, c)
		}
		if rest == "" {
			return nil, fmt.Errorf("%w: cursor %q names no place", flow.ErrInvalid, c)
		}
		c = rest
	}
	if c != "" {
		cs = strings.Split(c, ",")
		if len(cs) != len(parts) {
			return nil, fmt.Errorf("%w: cursor %q is not one of this queue's (%d partitions)", flow.ErrInvalid, c, len(parts))
		}
		form := cursorForms[state]
		if state == flow.StateRetryable {
			form = cursorForms[flow.StateScheduled]
		} else if form == nil {
			form = cursorForms[""]
		}
		more := false
		for _, p := range cs {
			if p != "" && p != cursorDone && !form.MatchString(p) {
				return nil, fmt.Errorf("%w: cursor %q is not one of a listing of %s jobs", flow.ErrInvalid, c, state)
			}
			more = more || p != cursorDone
		}
		// every partition done: the last page's Next is "", never this,
		// which would answer an empty page as if the listing ended there
		if !more {
			return nil, fmt.Errorf("%w: cursor %q ends every partition: no listing gives it (the last page has none)", flow.ErrInvalid, c)
		}
	}
	out := make([]*stream, len(parts))
	for i, p := range parts {
		s := &stream{p: p, next: cs[i], resume: cs[i]}
		if cs[i] == cursorDone {
			s.next, s.done = "", true
		}
		out[i] = s
	}
	return out, nil
}

func formatCursor(streams []*stream) string {
	cs := make([]string, len(streams))
	more := false
	for i, s := range streams {
		switch {
		case len(s.buf) > 0:
			cs[i] = s.resume
		case s.done:
			cs[i] = cursorDone
		default:
			cs[i] = s.next
		}
		more = more || cs[i] != cursorDone
	}
	if !more {
		return ""
	}
	return strings.Join(cs, ",")
}
