package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// listFields are the job fields a listing returns, in lua/list.lua's
// FIELDS order.
var listFields = []string{
	keys.FieldState, keys.FieldKind, keys.FieldPriority, keys.FieldAttempt, keys.FieldCrashAttempt,
	keys.FieldMaxAttempts, keys.FieldCreated, keys.FieldRunAt, keys.FieldFinished, keys.FieldReason,
	keys.FieldLastError, keys.FieldWorker, keys.FieldLeaseStart, keys.FieldRedrives, keys.FieldParent,
	keys.FieldTimeout, keys.FieldDeadline, keys.FieldRedrivenAt, keys.FieldFence, keys.FieldAwaits, keys.FieldHeldBy,
	keys.FieldLeaseID, // a running job's holder and lease start are in it (LeaseHolder)
}

// ctField is the index of keys.FieldCreated in listFields.
const ctField = 6

// ListEntry is one job of a listing page.
type ListEntry struct {
	Job   *Job    // the fields of listFields only: no payload, result or steps
	Key   float64 // the sort key: higher comes first
	After string  // the partition's cursor just after this entry
}

// ListPage is one page of one partition's jobs in one state.
type ListPage struct {
	Entries []ListEntry
	// Next is the partition's cursor after every entry examined; "" when
	// the partition has no more.
	Next string
}

// List reads up to n jobs of partition p in state (of kind, when not ""),
// from cursor ("" for the start), examining at most budget entries
// (lua/list.lua documents the order).
func (s *Store) List(ctx context.Context, p keys.Partition, state, cursor string, n, budget int, kind string) (ListPage, error) {
	v, err := s.run(ctx, lua.List, p, state, cursor, n, budget, kind).Result()
	if err != nil {
		return ListPage{}, err
	}
	reply, ok := v.([]any)
	if !ok || len(reply) < 1 {
		return ListPage{}, fmt.Errorf("%w: list reply %T", ErrMalformed, v)
	}
	var page ListPage
	page.Next, _ = reply[0].(string)
	for _, e := range reply[1:] {
		le, err := decodeListed(e)
		if err != nil {
			return page, err
		}
		page.Entries = append(page.Entries, le)
	}
	return page, nil
}

// decodeListed reads { cursor after, sort key, id, values of listFields }.
func decodeListed(e any) (ListEntry, error) {
	v, ok := e.([]any)
	if !ok || len(v) != 3+len(listFields) {
		return ListEntry{}, fmt.Errorf("%w: listed job %T", ErrMalformed, e)
	}
	after, _ := v[0].(string)
	ks, _ := v[1].(string)
	id, _ := v[2].(string)
	key, err := strconv.ParseFloat(ks, 64)
	if err != nil {
		return ListEntry{}, fmt.Errorf("%w: listed job %s: sort key %q", ErrMalformed, id, ks)
	}
	flat := make([]any, 0, 2*len(listFields))
	for i, f := range listFields {
		if s, ok := v[3+i].(string); ok {
			flat = append(flat, f, s)
		}
	}
	j, err := decodeJob(id, flat)
	if err != nil { // list it anyway, saying what is wrong, by its state and kind
		st, _ := v[3].(string)
		kind, _ := v[4].(string)
		j = &Job{Local: id, State: st, Kind: kind, LastError: err.Error()}
	}
	if j.State == "running" {
		j.LeaseExpiry = time.UnixMilli(int64(key))
	}
	if _, stored := v[3+ctField].(string); j.State == "available" && !stored {
		// list.lua's key is priority*1e14 + created time, and a job whose
		// generated ID carries its created time has no FieldCreated
		// (enqueue.lua)
		key += float64(j.Created.UnixMilli())
	}
	return ListEntry{Job: j, Key: key, After: after}, nil
}
