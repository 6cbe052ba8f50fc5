package flow

import (
	"bytes"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// decoder is a msgpack decoder with the reader it reads from, kept for
// reuse: msgpack.Unmarshal allocates a reader on every call, once per job
// a worker runs.
type decoder struct {
	r   bytes.Reader
	dec *msgpack.Decoder
}

var decoders = sync.Pool{New: func() any {
	d := new(decoder)
	d.dec = msgpack.NewDecoder(&d.r)
	return d
}}

// unmarshal is msgpack.Unmarshal(b, v), with the same decoder settings
// (its Reset clears the options Unmarshal sets before it).
func unmarshal(b []byte, v any) error {
	d := decoders.Get().(*decoder)
	d.r.Reset(b)
	d.dec.Reset(&d.r)
	err := d.dec.Decode(v)
	d.r.Reset(nil) // the pool keeps no job's bytes
	decoders.Put(d)
	return err
}
