package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/sluicetype"
)

// Get reads one job with its recent errors and step checkpoints in one
// round trip, as one transaction: the job hash and its payload key (see
// keys.Partition.Body) are read at the same instant, never across a
// script that moves or deletes the payload. Every key shares the
// partition's slot. Like a script, it refuses a partition at a newer data
// model (ErrNewerDataModel, read in the same transaction); a job hash or
// payload key (when the job keeps its payload there) that holds another
// type than Sluice writes there is ErrMalformed. Its other keys (recent errors, lease, checkpoints) of
// another type are left out of what it reads, so that a job a worker
// archived 'malformed' for one of them can be read (and deleted).
func (s *Store) Get(ctx context.Context, ref keys.Ref) (*Job, []sluicetype.ErrorRecord, error) {
	var (
		dm    models
		all   *redis.MapStringStringCmd
		body  *redis.StringCmd
		errs  *redis.StringSliceCmd
		exp   *redis.FloatCmd
		steps *redis.MapStringStringCmd
	)
	_, _ = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { // errors: by command
		dm.add(ctx, p, ref.Partition)
		all = p.HGetAll(ctx, ref.Job(ref.Local))
		body = p.Get(ctx, ref.Body(ref.Local))
		errs = p.LRange(ctx, ref.Errors(ref.Local), 0, -1)
		exp = p.ZScore(ctx, ref.Running(), ref.Local)
		steps = p.HGetAll(ctx, ref.Steps(ref.Local))
		return nil
	})
	if err := dm.err(); err != nil {
		return nil, nil, err
	}
	if err := pipeError([]redis.Cmder{all}); err != nil {
		return nil, nil, err
	}
	m := all.Val()
	if len(m) == 0 {
		return nil, nil, ErrNotFound
	}
	flat := make([]any, 0, 2*len(m)+2)
	for k, v := range m {
		flat = append(flat, k, v)
	}
	if m[keys.FieldPayloadBody] != "" { // the payload has a key of its own
		if err := pipeError([]redis.Cmder{body}); err != nil {
			return nil, nil, err
		}
		if b, err := body.Result(); err == nil {
			flat = append(flat, keys.FieldPayload, b)
		}
	}
	j, err := decodeJob(ref.Local, flat)
	if err != nil {
		return nil, nil, err
	}
	if m := steps.Val(); len(m) > 0 {
		if j.Steps == nil { // else it holds the timers of the job hash
			j.Steps = make(map[string][]byte, len(m))
		}
		for k, v := range m {
			j.addStep(k, v)
		}
	}
	if e, err := exp.Result(); err == nil && j.State == "running" {
		j.LeaseExpiry = timeOrZero(int64(e))
	}
	var recs []sluicetype.ErrorRecord
	for _, s := range errs.Val() {
		r, err := decodeErrorRecord(s)
		if err != nil {
			return j, recs, err
		}
		recs = append(recs, r)
	}
	return j, recs, nil
}

// Kid is a finished child as its parent recorded it.
type Kid struct {
	Done    bool
	State   string
	Payload []byte // the result when completed, else the last error
}

// Kids reads what parent recorded of the children locals, in one round
// trip in the parent's slot; like Get, it refuses a partition at a newer
// data model, and a record of another type is ErrMalformed.
func (s *Store) Kids(ctx context.Context, parent keys.Ref, locals []string) ([]Kid, error) {
	var (
		dm  models
		cmd *redis.SliceCmd
	)
	cmds, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		dm.add(ctx, p, parent.Partition)
		cmd = p.HMGet(ctx, parent.Kids(parent.Local), locals...)
		return nil
	})
	if err := dm.err(); err != nil {
		return nil, err
	}
	if err := pipeError(cmds); err != nil {
		return nil, err
	}
	vals := cmd.Val()
	out := make([]Kid, len(locals))
	for i, v := range vals {
		str, ok := v.(string)
		if !ok {
			continue
		}
		state, payload, _ := strings.Cut(str, "\n")
		out[i] = Kid{Done: true, State: state, Payload: []byte(payload)}
	}
	return out, nil
}

// JobFields is what JobsFields read of one job.
type JobFields struct {
	Values []string // by field asked for; "" for an absent field or job
	// Err, when set, is why this job could not be read: its partition
	// is at a newer data model (ErrNewerDataModel), its key holds
	// another type (ErrMalformed). The other jobs are read all the same.
	Err error
}

// JobsFields reads fields of each job of refs, in one pipelined round
// trip (one HMGET per job, one GET of each partition's data model). A
// job that cannot be read has its own Err; the error returned is that of
// reaching Redis.
func (s *Store) JobsFields(ctx context.Context, refs []keys.Ref, fields ...string) ([]JobFields, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	var dm models
	cmds := make([]*redis.SliceCmd, len(refs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range refs {
			dm.add(ctx, p, r.Partition)
			cmds[i] = p.HMGet(ctx, r.Job(r.Local), fields...)
		}
		return nil
	})
	if err != nil && !isReplyError(err) {
		return nil, err
	}
	// the pipeline's error is its first command's (a data model's GET,
	// nil when absent): a command further on that did not reach Redis
	// fails the call, not its job alone
	if err := dm.unreached(); err != nil {
		return nil, err
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil && !isReplyError(err) {
			return nil, err
		}
	}
	out := make([]JobFields, len(refs))
	for i, c := range cmds {
		if err := dm.of(refs[i].Partition); err != nil {
			out[i].Err = err
			continue
		}
		if err := c.Err(); err != nil {
			out[i].Err = fmt.Errorf("job %s: %w", refs[i], readError(err))
			continue
		}
		out[i].Values = make([]string, len(fields))
		for k, v := range c.Val() {
			if k < len(fields) {
				out[i].Values[k], _ = v.(string)
			}
		}
	}
	return out, nil
}

// ChildrenPage reads up to about count of the finished children that
// parent recorded (field: the child's local ID, value: its record), in
// one HSCAN from the start, and whether there are more. A record of
// another type is ErrMalformed.
func (s *Store) ChildrenPage(ctx context.Context, parent keys.Ref, count int64) (kv []string, more bool, err error) {
	kv, cursor, err := s.rdb.HScan(ctx, parent.Kids(parent.Local), 0, "", count).Result()
	if err != nil {
		return nil, false, readError(err)
	}
	return kv, cursor != 0, nil
}
