package store

import (
	"fmt"
	"strings"
)

// unpacker reads msgpack as lua/lib_pack.lua writes it (cmsgpack on a
// redis-server, a Lua encoder elsewhere): lists, strings, integers and
// false. Strings are read in place: each is a substring of the packed
// reply, so reading a claim allocates nothing per field, unless own says
// to copy them. The first error sticks: a read after it returns zero
// values, and err reports it.
type unpacker struct {
	s   string
	i   int
	own bool
	err error
}

// sharedReplyMax is the longest packed reply whose strings are read in
// place.
const sharedReplyMax = 64 << 10

// fail records the first error.
func (u *unpacker) fail(format string, args ...any) {
	if u.err == nil {
		u.err = fmt.Errorf("%w: packed reply at byte %d: %s", ErrMalformed, u.i, fmt.Sprintf(format, args...))
	}
}

// next is the next n bytes, or "" past the end (an error).
func (u *unpacker) next(n int) string {
	if u.err != nil {
		return ""
	}
	if n < 0 || n > len(u.s)-u.i {
		u.fail("%d bytes wanted, %d left", n, len(u.s)-u.i)
		return ""
	}
	v := u.s[u.i : u.i+n]
	u.i += n
	return v
}

// tag is the next value's first byte.
func (u *unpacker) tag() byte {
	b := u.next(1)
	if b == "" {
		return 0
	}
	return b[0]
}

// peek is the next value's first byte, not consumed (0 at the end).
func (u *unpacker) peek() byte {
	if u.err != nil || u.i >= len(u.s) {
		return 0
	}
	return u.s[u.i]
}

// uint is a big-endian unsigned integer of n (1, 2, 4 or 8) bytes.
func (u *unpacker) uint(n int) uint64 {
	b := u.next(n)
	var v uint64
	for i := 0; i < len(b); i++ {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// list reads a list's header and returns its length.
func (u *unpacker) list() int {
	switch t := u.tag(); {
	case t >= 0x90 && t <= 0x9f:
		return int(t & 0x0f)
	case t == 0xdc:
		return int(u.uint(2))
	case t == 0xdd:
		return u.length(u.uint(4))
	default:
		u.fail("list expected, tag %#x", t)
		return 0
	}
}

// length is n as a count of what is left to read, which can be no more
// than the bytes left (each element takes one at least).
func (u *unpacker) length(n uint64) int {
	if n > uint64(len(u.s)-u.i) {
		u.fail("length %d past the end", n)
		return 0
	}
	return int(n)
}

// str reads a string.
func (u *unpacker) str() string {
	v := u.raw()
	if u.own {
		return strings.Clone(v)
	}
	return v
}

// raw reads a string in place.
func (u *unpacker) raw() string {
	switch t := u.tag(); {
	case t >= 0xa0 && t <= 0xbf:
		return u.next(int(t & 0x1f))
	case t == 0xd9 || t == 0xc4:
		return u.next(int(u.uint(1)))
	case t == 0xda || t == 0xc5:
		return u.next(int(u.uint(2)))
	case t == 0xdb || t == 0xc6:
		return u.next(u.length(u.uint(4)))
	default:
		u.fail("string expected, tag %#x", t)
		return ""
	}
}

// strOrFalse reads a string, or false (ok false).
func (u *unpacker) strOrFalse() (v string, ok bool) {
	if u.peek() == 0xc2 {
		u.i++
		return "", false
	}
	return u.str(), true
}

// int reads an integer.
func (u *unpacker) int() int64 {
	switch t := u.tag(); {
	case t <= 0x7f:
		return int64(t)
	case t >= 0xe0:
		return int64(int8(t))
	case t >= 0xcc && t <= 0xcf:
		v := u.uint(1 << (t - 0xcc))
		if v > 1<<63-1 {
			u.fail("integer %d out of range", v)
		}
		return int64(v)
	case t >= 0xd0 && t <= 0xd3:
		n := 1 << (t - 0xd0)
		v := u.uint(n)
		shift := 64 - 8*n // sign-extend from n bytes
		return int64(v<<shift) >> shift
	default:
		u.fail("integer expected, tag %#x", t)
		return 0
	}
}

// strs reads a list of strings into buf (reused: its storage is kept).
func (u *unpacker) strs(buf []string) []string {
	n := u.list()
	buf = buf[:0]
	for range n {
		if u.err != nil {
			break
		}
		buf = append(buf, u.str())
	}
	return buf
}
