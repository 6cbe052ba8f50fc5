package mpack

import (
	"bytes"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// encoder is a msgpack encoder with the buffer it writes to, kept for
// reuse.
type encoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := new(encoder)
	e.enc = msgpack.NewEncoder(&e.buf)
	return e
}}

// keepMax is the largest buffer the pool keeps: one large value must not
// pin its size for good.
const keepMax = 64 << 10

// Encode calls use with the msgpack encoding of v, as msgpack.Marshal
// writes it; the bytes are valid only during the call. It returns the
// encoding's error, else use's.
func Encode(v any, use func([]byte) error) error {
	e := encoders.Get().(*encoder)
	err := e.enc.Encode(v)
	if err == nil {
		err = use(e.buf.Bytes())
	}
	if e.buf.Cap() <= keepMax {
		e.buf.Reset()
		e.enc.Reset(&e.buf) // msgpack.Marshal's settings: Reset clears any option
		encoders.Put(e)
	}
	return err
}

// Marshal is msgpack.Marshal(v): the same bytes, in one allocation.
func Marshal(v any) ([]byte, error) {
	var out []byte
	err := Encode(v, func(b []byte) error {
		out = bytes.Clone(b)
		return nil
	})
	return out, err
}
