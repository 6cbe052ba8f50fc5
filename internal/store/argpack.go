package store

import (
	"encoding/binary"
	"strconv"
)

// argList packs a call's per-item arguments into one ARGV element, a
// msgpack list of strings (lua/lib_pack.lua's unpack_args), where each
// would otherwise be an element of its own: go-redis boxes every argument
// it is given (two allocations for an ack's job ID and lease ID) and
// writes each with its own header, and Redis parses each into a string
// before the script turns it into another. Values are written as go-redis
// formats them, so a script reads the same strings either way.
type argList struct {
	b []byte
	n uint32
}

// maxCallBytes bounds the bytes of items one call packs into its
// argument: Redis refuses an argument longer than proto-max-bulk-len (512
// MB by default) by closing the connection, where each item used to be
// an argument of its own, and a call that large would hold Redis up
// anyway. Items past it go in the next call (callCut); an item longer
// than it goes alone.
const maxCallBytes = 32 << 20

// callCut is how many of the first n items, the i-th of size(i) bytes,
// one call takes: at most max, and no more than maxCallBytes of them
// unless the first alone is more; and their bytes, the room the call's
// packed argument starts with (grown by append as the items went in, a
// step call's was an eighth of the bytes a 10-step workflow allocated).
func callCut(n, max int, size func(i int) int) (items, bytes int) {
	for i := range min(n, max) {
		s := size(i)
		if bytes+s > maxCallBytes && i > 0 {
			return i, bytes
		}
		bytes += s
	}
	return min(n, max), bytes
}

// newArgList is an empty list with room for about size bytes.
func newArgList(size int) *argList {
	l := &argList{b: make([]byte, 5, 5+size)}
	l.b[0] = 0xdd // array 32: the count is known at the end
	return l
}

// str adds s.
func (l *argList) str(s string) {
	l.header(len(s))
	l.b = append(l.b, s...)
}

// bytes adds b as a string.
func (l *argList) bytes(b []byte) {
	l.header(len(b))
	l.b = append(l.b, b...)
}

// int adds n in decimal.
func (l *argList) int(n int64) {
	at := len(l.b)
	l.b = append(l.b, 0xa0) // fixstr: at most 20 digits
	l.b = strconv.AppendInt(l.b, n, 10)
	l.b[at] |= byte(len(l.b) - at - 1)
	l.n++
}

// header starts a string of n bytes.
func (l *argList) header(n int) {
	switch {
	case n < 32:
		l.b = append(l.b, 0xa0|byte(n))
	case n < 1<<8:
		l.b = append(l.b, 0xd9, byte(n))
	case n < 1<<16:
		l.b = binary.BigEndian.AppendUint16(append(l.b, 0xda), uint16(n))
	default:
		l.b = binary.BigEndian.AppendUint32(append(l.b, 0xdb), uint32(n))
	}
	l.n++
}

// done is the packed list.
func (l *argList) done() []byte {
	binary.BigEndian.PutUint32(l.b[1:5], l.n)
	return l.b
}
