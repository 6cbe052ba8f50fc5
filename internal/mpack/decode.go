// Package mpack is msgpack encoding and decoding with pooled encoders and
// decoders: msgpack.Marshal and Unmarshal allocate theirs on every call,
// and a worker decodes a payload per job and encodes a result per step.
package mpack

import (
	"bytes"
	"errors"
	"fmt"
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

// ErrUndecodable: msgpack cannot fill the type decoded into (a non-empty
// interface field, such as a fmt.Stringer, which it encodes but panics
// on decoding).
var ErrUndecodable = errors.New("msgpack: the value cannot be decoded into its type")

// Unmarshal is msgpack.Unmarshal(b, v), with the same decoder settings
// (its Reset clears the options Unmarshal sets before it). Where msgpack
// panics, on a type it encodes but cannot decode into, Unmarshal returns
// ErrUndecodable: a job's arguments, a step's or child's result, read by
// a worker or by a caller's process, would otherwise crash it.
func Unmarshal(b []byte, v any) (err error) {
	d := decoders.Get().(*decoder)
	d.r.Reset(b)
	d.dec.Reset(&d.r)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrUndecodable, p) // the decoder is dropped
			return
		}
		d.r.Reset(nil) // the pool keeps no job's bytes
		decoders.Put(d)
	}()
	return d.dec.Decode(v)
}
