package mpack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"slices"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Canonical is Marshal(v) with every map's entries in one order (by their
// keys' encoded bytes), so that equal values encode to equal bytes: the
// msgpack package writes most maps in Go's random iteration order, and a
// job's payload is compared (an idempotent ID's repeat), hashed (a unique
// key of its arguments, its placement) and fingerprinted (a quarantine
// hold) as bytes.
//
// Only a value that holds a Go map of two entries or more, whose bytes
// were never stable, is put in that order; and then so are its structs'
// fields, which msgpack writes as maps too. Any other value is Marshal's
// bytes as they are, which earlier builds wrote and stored: a type that
// can hold no map (most arguments) at no extra cost. A type that encodes
// itself (msgpack.CustomEncoder, Marshaler) is its own: its bytes are
// taken as they come.
func Canonical(v any) ([]byte, error) {
	b, err := Marshal(v)
	if err != nil || v == nil || !mayHoldMap(reflect.TypeOf(v)) || !multiMap(reflect.ValueOf(v)) {
		return b, err
	}
	out, rest, err := canon(nil, b)
	if err == nil && len(rest) != 0 {
		err = errCanon
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// errCanon: the encoder wrote what the canonical pass cannot read (never,
// for msgpack's own output).
var errCanon = errors.New("mpack: cannot put the encoding in canonical order")

var (
	mapTypes      sync.Map // reflect.Type -> bool: mayHoldMap's answers
	customEncoder = reflect.TypeFor[msgpack.CustomEncoder]()
	marshaler     = reflect.TypeFor[msgpack.Marshaler]()
)

// mayHoldMap reports whether a value of type t can hold a Go map: it is
// one, or holds one (in a field, an element, behind a pointer), or holds
// an interface, which may. A type that encodes itself is not looked into.
func mayHoldMap(t reflect.Type) bool {
	if v, ok := mapTypes.Load(t); ok {
		return v.(bool)
	}
	may := holdsMap(t, map[reflect.Type]bool{})
	mapTypes.Store(t, may)
	return may
}

func holdsMap(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false // a recursive type: its other parts answer
	}
	seen[t] = true
	if encodesItself(t) {
		return false
	}
	switch t.Kind() {
	case reflect.Map, reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holdsMap(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if holdsMap(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// encodesItself reports whether msgpack encodes a value of type t by its
// own method.
func encodesItself(t reflect.Type) bool {
	return t.Implements(customEncoder) || t.Implements(marshaler) ||
		reflect.PointerTo(t).Implements(customEncoder) || reflect.PointerTo(t).Implements(marshaler)
}

// multiMap reports whether v holds a Go map of two entries or more, which
// msgpack writes in no fixed order (outside values that encode
// themselves).
func multiMap(v reflect.Value) bool {
	if !v.IsValid() || encodesItself(v.Type()) {
		return false
	}
	switch v.Kind() {
	case reflect.Map:
		if v.Len() >= 2 {
			return true
		}
		for it := v.MapRange(); it.Next(); {
			if multiMap(it.Key()) || multiMap(it.Value()) {
				return true
			}
		}
	case reflect.Interface, reflect.Pointer:
		return !v.IsNil() && multiMap(v.Elem())
	case reflect.Slice, reflect.Array:
		if !mayHoldMap(v.Type().Elem()) {
			return false
		}
		for i := range v.Len() {
			if multiMap(v.Index(i)) {
				return true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			// only what msgpack writes: exported fields (and embedded
			// ones, whose fields it inlines), not tagged "-"
			if (!f.IsExported() && !f.Anonymous) || f.Tag.Get("msgpack") == "-" {
				continue
			}
			if mayHoldMap(f.Type) && multiMap(v.Field(i)) {
				return true
			}
		}
	}
	return false
}

// canon appends to out the canonical form of the first msgpack value of
// b, and returns the rest of b.
func canon(out, b []byte) ([]byte, []byte, error) {
	if len(b) == 0 {
		return nil, nil, errCanon
	}
	c := b[0]
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3: // fixint, nil, bool
		return append(out, c), b[1:], nil
	case c >= 0x80 && c <= 0x8f: // fixmap
		return canonMap(out, b[:1], b[1:], int(c&0x0f))
	case c == 0xde || c == 0xdf: // map 16, 32
		n, head, rest, err := count(b, c == 0xdf)
		if err != nil {
			return nil, nil, err
		}
		return canonMap(out, head, rest, n)
	case c >= 0x90 && c <= 0x9f: // fixarray
		return canonArray(append(out, c), b[1:], int(c&0x0f))
	case c == 0xdc || c == 0xdd: // array 16, 32
		n, head, rest, err := count(b, c == 0xdd)
		if err != nil {
			return nil, nil, err
		}
		return canonArray(append(out, head...), rest, n)
	}
	n, err := scalarLen(b)
	if err != nil || n > len(b) {
		return nil, nil, errCanon
	}
	return append(out, b[:n]...), b[n:], nil
}

// count reads a map's or array's 16 or 32-bit count: the count, its
// header's bytes and what follows.
func count(b []byte, wide bool) (int, []byte, []byte, error) {
	size := 3
	if wide {
		size = 5
	}
	if len(b) < size {
		return 0, nil, nil, errCanon
	}
	n := int(binary.BigEndian.Uint16(b[1:]))
	if wide {
		n = int(binary.BigEndian.Uint32(b[1:]))
	}
	return n, b[:size], b[size:], nil
}

func canonArray(out, b []byte, n int) ([]byte, []byte, error) {
	var err error
	for range n {
		if out, b, err = canon(out, b); err != nil {
			return nil, nil, err
		}
	}
	return out, b, nil
}

// canonMap writes a map's header and its n entries, read from b, sorted
// by their canonical keys' bytes.
func canonMap(out, head, b []byte, n int) ([]byte, []byte, error) {
	type entry struct{ key, all []byte }
	entries := make([]entry, 0, min(n, len(b)/2))
	var err error
	for range n {
		var e []byte
		if e, b, err = canon(nil, b); err != nil {
			return nil, nil, err
		}
		k := len(e)
		if e, b, err = canon(e, b); err != nil {
			return nil, nil, err
		}
		entries = append(entries, entry{key: e[:k], all: e})
	}
	slices.SortStableFunc(entries, func(x, y entry) int { return bytes.Compare(x.key, y.key) })
	out = append(out, head...)
	for _, e := range entries {
		out = append(out, e.all...)
	}
	return out, b, nil
}

// scalarLen is the length of the scalar (number, string, binary,
// extension) whose encoding starts b.
func scalarLen(b []byte) (int, error) {
	c := b[0]
	size := func(width, extra int) (int, error) { // a length of width bytes, then extra more
		if len(b) < 1+width {
			return 0, errCanon
		}
		var n int
		switch width {
		case 1:
			n = int(b[1])
		case 2:
			n = int(binary.BigEndian.Uint16(b[1:]))
		default:
			n = int(binary.BigEndian.Uint32(b[1:]))
		}
		return 1 + width + extra + n, nil
	}
	switch {
	case c >= 0xa0 && c <= 0xbf: // fixstr
		return 1 + int(c&0x1f), nil
	case c == 0xcc || c == 0xd0: // uint8, int8
		return 2, nil
	case c == 0xcd || c == 0xd1: // uint16, int16
		return 3, nil
	case c == 0xca || c == 0xce || c == 0xd2: // float32, uint32, int32
		return 5, nil
	case c == 0xcb || c == 0xcf || c == 0xd3: // float64, uint64, int64
		return 9, nil
	case c == 0xd4, c == 0xd5, c == 0xd6, c == 0xd7, c == 0xd8: // fixext 1, 2, 4, 8, 16: type, data
		return 2 + 1<<(c-0xd4), nil
	case c == 0xc4 || c == 0xd9: // bin8, str8
		return size(1, 0)
	case c == 0xc5 || c == 0xda: // bin16, str16
		return size(2, 0)
	case c == 0xc6 || c == 0xdb: // bin32, str32
		return size(4, 0)
	case c == 0xc7: // ext8: length, type, data
		return size(1, 1)
	case c == 0xc8:
		return size(2, 1)
	case c == 0xc9:
		return size(4, 1)
	}
	return 0, errCanon // 0xc1, never used
}
