package keys

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"strings"
	"time"
)

// idAlphabet is the base32 alphabet of generated job IDs: lower case,
// without i, l, o and u.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

var idEncoding = base32.NewEncoding(idAlphabet).WithPadding(base32.NoPadding)

// NewLocal returns a fresh job ID within a partition: 16 characters, 48
// bits of milliseconds then 32 random bits, so IDs sort roughly by
// creation time. Two producers can draw the same one in the same
// millisecond; the enqueue script refuses to write over a job and the
// store retries with another (store.Enqueue).
func NewLocal() string { return NewLocalAt(time.Now()) }

// NewLocalAt is NewLocal for an ID created at t.
func NewLocalAt(t time.Time) string {
	var b [10]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	return idEncoding.EncodeToString(b[:])
}

// LocalTime returns the creation time NewLocal put in a job ID, and
// whether local starts like one of its IDs (16 characters of its
// alphabet). The time is the producer's clock, to the millisecond; a job
// ID the caller chose may decode to anything, so only a store that knows
// the ID was generated may rely on it.
func LocalTime(local string) (time.Time, bool) {
	if len(local) < 16 {
		return time.Time{}, false
	}
	var bits uint64 // the first 10 characters: 50 bits, the first 48 the time
	for i := range 16 {
		c := strings.IndexByte(idAlphabet, local[i])
		if c < 0 {
			return time.Time{}, false
		}
		if i < 10 {
			bits = bits<<5 | uint64(c)
		}
	}
	return time.UnixMilli(int64(bits >> 2)), true
}
