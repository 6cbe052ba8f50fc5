// Package checkpoint is the stored form of a step checkpoint, shared by the
// step package that writes it and the tools that show it.
package checkpoint

import (
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// CursorPrefix starts the field of a cursor's progress.
const CursorPrefix = "cursor:"

// Record is one step checkpoint.
type Record struct {
	Index  int    `msgpack:"i"` // position in the handler's step sequence
	Result []byte `msgpack:"r"` // msgpack of the step's result
	At     int64  `msgpack:"t"` // when it was written (unix ms)
}

// Time is when the checkpoint was written.
func (r Record) Time() time.Time { return time.UnixMilli(r.At) }

// Decode reads a stored record.
func Decode(b []byte) (Record, error) {
	var r Record
	err := msgpack.Unmarshal(b, &r)
	return r, err
}

// IsCursor reports whether field holds a cursor's progress rather than a
// step.
func IsCursor(field string) bool { return strings.HasPrefix(field, CursorPrefix) }
