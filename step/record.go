package step

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/checkpoint"
	"github.com/sluicehq/sluice/internal/mpack"
	"github.com/sluicehq/sluice/internal/names"
)

// MaxResult bounds a step's encoded result, and a cursor's encoded
// checkpoint (its value and a sequence number).
const MaxResult = 1 << 20

type record = checkpoint.Record

// cursorField is the checkpoint field of cursor name's progress.
func cursorField(name string) string { return checkpoint.CursorPrefix + name }

// begin validates name, registers it as the attempt's next step and checks
// that it sits where the job's checkpoints say it did. It returns the
// step's own checkpoint, if it has one.
func begin(st *attempt.State, name string) (int, *record, error) {
	if !names.Valid(name, 100, "_./-") {
		return 0, nil, park("invalid_step", fmt.Errorf("%w: %s", ErrInvalidName, names.Quote(name)))
	}
	idx, err := st.Begin(name)
	if err != nil {
		return 0, nil, park("duplicate_step", err)
	}
	byIndex, err := positions(st)
	if err != nil {
		return 0, nil, err
	}
	b, done := st.Checkpoint(name)
	if !done {
		if other, taken := byIndex[idx]; taken {
			return 0, nil, park("stale_checkpoint", fmt.Errorf("%w: step %d is %q in the checkpoint, %q now", ErrStaleCheckpoint, idx, other, name))
		}
		return idx, nil, nil
	}
	r, err := checkpoint.Decode(b)
	if err != nil {
		return 0, nil, park("stale_checkpoint", fmt.Errorf("%w: step %q: %v", ErrStaleCheckpoint, name, err))
	}
	if r.Index != idx {
		return 0, nil, park("stale_checkpoint", fmt.Errorf("%w: step %q was number %d, is number %d now", ErrStaleCheckpoint, name, r.Index, idx))
	}
	return idx, &r, nil
}

// positions maps each checkpointed step's position to its name, decoded
// once per attempt.
func positions(st *attempt.State) (map[int]string, error) {
	type result struct {
		m   map[int]string
		err error
	}
	r := st.Memo("step.positions", func() any {
		m := map[int]string{}
		for field, b := range st.Checkpoints() {
			if !checkpoint.IsStep(field) {
				continue
			}
			rec, err := checkpoint.Decode(b)
			if err != nil {
				return result{err: park("stale_checkpoint", fmt.Errorf("%w: step %q: %v", ErrStaleCheckpoint, field, err))}
			}
			m[rec.Index] = field
		}
		return result{m: m}
	}).(result)
	return r.m, r.err
}

// encodeRecord returns the checkpoint record of step idx whose result is
// v, once check has read the result's encoding: the step's first run
// returns what check decodes from it, the value every later attempt
// decodes from the checkpoint. A check that fails refuses the result;
// nil checks nothing (a record of the step package's own types).
func encodeRecord(idx int, v any, check func(res []byte) error) ([]byte, error) {
	var b []byte
	size := 0
	err := mpack.Encode(v, func(res []byte) error {
		if size = len(res); size > MaxResult {
			return nil
		}
		if check != nil {
			if err := check(res); err != nil {
				return err
			}
		}
		b = checkpoint.Encode(record{Index: idx, Result: res, At: time.Now().UnixMilli()})
		return nil
	})
	if err != nil {
		return nil, park("step_result", fmt.Errorf("%w: %v", ErrResult, err))
	}
	if size > MaxResult {
		return nil, park("step_result", fmt.Errorf("%w: %d bytes, the limit is %d", ErrResult, size, MaxResult))
	}
	return b, nil
}

// decode reads msgpack b into v. msgpack panics on some types it encodes
// but cannot decode into (a non-empty interface field, such as a
// fmt.Stringer): that is an error here (mpack.ErrUndecodable), which parks
// the job, where the panic crashed every attempt into quarantine.
func decode(b []byte, v any) error { return mpack.Unmarshal(b, v) }
