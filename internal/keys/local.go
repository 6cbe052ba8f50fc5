package keys

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"time"
)

var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// NewLocal returns a fresh job ID within a partition: 16 characters, 48
// bits of milliseconds then 32 random bits, so IDs sort roughly by
// creation time. Two producers can draw the same one in the same
// millisecond; the enqueue script refuses to write over a job and the
// store retries with another (store.Enqueue).
func NewLocal() string {
	var b [10]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	return idEncoding.EncodeToString(b[:])
}
