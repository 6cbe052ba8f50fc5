// Package msgview shows msgpack values (job arguments, results, step
// checkpoints, signal payloads) to people: the CLI's and the console's
// views decode them the same way.
package msgview

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// MaxDepth bounds the nesting of arrays and maps Decode takes. The
// decoder, JSON and encoding/json all recurse once per level: a payload of
// a million nested one-element arrays (a megabyte) overflowed the stack,
// which kills the process (no recover catches it).
const MaxDepth = 1000

// ErrTooDeep: the value nests arrays and maps more than MaxDepth levels
// deep; Decode refuses it before decoding.
var ErrTooDeep = fmt.Errorf("msgpack nested more than %d levels deep", MaxDepth)

// Decode decodes msgpack b into a value encoding/json takes (see JSON).
// Maps decode with keys of any type (msgpack allows them; Go's default
// decoding into any would refuse a map whose keys are not strings). A
// value nested more than MaxDepth levels deep is ErrTooDeep.
func Decode(b []byte) (any, error) {
	if err := checkDepth(b, MaxDepth); err != nil {
		return nil, err
	}
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	dec.SetMapDecoder(func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() })
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return JSON(v), nil
}

// JSON turns what msgpack may decode to into what encoding/json takes:
// maps with keys of any type get string keys, and bytes become strings.
// It changes maps and slices in place.
func JSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = JSON(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = JSON(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = JSON(e)
		}
		return x
	case []byte:
		return string(x)
	}
	return v
}

// checkDepth walks the first msgpack value of b without recursion and
// returns ErrTooDeep when its arrays and maps nest more than limit levels
// deep. It checks nothing else: what is not msgpack is left for the
// decoder to refuse (the walk stops at a byte it does not know, or at the
// end of b).
func checkDepth(b []byte, limit int) error {
	var open []uint64 // per open array or map, the items still to come
	i := 0
	// size reads an n-byte big-endian length at b[i].
	size := func(n int) (uint64, bool) {
		if len(b)-i < n {
			return 0, false
		}
		var v uint64
		switch n {
		case 1:
			v = uint64(b[i])
		case 2:
			v = uint64(binary.BigEndian.Uint16(b[i:]))
		case 4:
			v = uint64(binary.BigEndian.Uint32(b[i:]))
		}
		i += n
		return v, true
	}
	for i < len(b) {
		t := b[i]
		i++
		var items, skip uint64 // a container's items; a scalar's bytes after its header
		container, ok := false, true
		switch {
		case t <= 0x7f || t >= 0xe0, t == 0xc0, t == 0xc2, t == 0xc3: // fixints, nil, booleans
		case t >= 0x80 && t <= 0x8f: // fixmap
			container, items = true, 2*uint64(t&0x0f)
		case t >= 0x90 && t <= 0x9f: // fixarray
			container, items = true, uint64(t&0x0f)
		case t >= 0xa0 && t <= 0xbf: // fixstr
			skip = uint64(t & 0x1f)
		case t == 0xc4 || t == 0xd9: // bin8, str8
			skip, ok = size(1)
		case t == 0xc5 || t == 0xda: // bin16, str16
			skip, ok = size(2)
		case t == 0xc6 || t == 0xdb: // bin32, str32
			skip, ok = size(4)
		case t == 0xc7: // ext8: length, type, data
			skip, ok = size(1)
			skip++
		case t == 0xc8:
			skip, ok = size(2)
			skip++
		case t == 0xc9:
			skip, ok = size(4)
			skip++
		case t == 0xca:
			skip = 4
		case t == 0xcb:
			skip = 8
		case t >= 0xcc && t <= 0xcf: // uint 8..64
			skip = 1 << (t - 0xcc)
		case t >= 0xd0 && t <= 0xd3: // int 8..64
			skip = 1 << (t - 0xd0)
		case t >= 0xd4 && t <= 0xd8: // fixext 1..16: type, data
			skip = 1 + 1<<(t-0xd4)
		case t == 0xdc:
			items, ok = size(2)
			container = true
		case t == 0xdd:
			items, ok = size(4)
			container = true
		case t == 0xde:
			items, ok = size(2)
			container, items = true, 2*items
		case t == 0xdf:
			items, ok = size(4)
			container, items = true, 2*items
		default: // 0xc1, never used
			return nil
		}
		if !ok || skip > uint64(len(b)-i) {
			return nil
		}
		i += int(skip)
		if container && items > 0 {
			if len(open) == limit {
				return ErrTooDeep
			}
			open = append(open, items)
			continue
		}
		// a whole value: it ends the containers it was the last item of
		for len(open) > 0 {
			open[len(open)-1]--
			if open[len(open)-1] > 0 {
				break
			}
			open = open[:len(open)-1]
		}
		if len(open) == 0 {
			return nil
		}
	}
	return nil
}
