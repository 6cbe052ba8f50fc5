// Package mpack is msgpack encoding and decoding with pooled encoders and
// decoders: msgpack.Marshal and Unmarshal allocate theirs on every call,
// and a worker decodes a payload per job and encodes a result per step.
package mpack

import (
	"bytes"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// decoder is a msgpack decoder with the reader it reads from, kept for
// reuse.
type decoder struct {
	r   bytes.Reader
	dec *msgpack.Decoder
}

var decoders = sync.Pool{New: func() any {
	d := new(decoder)
	d.dec = msgpack.NewDecoder(&d.r)
	return d
}}

// Unmarshal is msgpack.Unmarshal(b, v), with the same decoder settings
// (its Reset clears the options Unmarshal sets before it).
func Unmarshal(b []byte, v any) error {
	d := decoders.Get().(*decoder)
	d.r.Reset(b)
	d.dec.Reset(&d.r)
	err := d.dec.Decode(v)
	d.r.Reset(nil) // the pool keeps no job's bytes
	decoders.Put(d)
	return err
}
