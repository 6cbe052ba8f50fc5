package store

import (
	"encoding/base64"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// CallKeep is the least time a script remembers the reply of a call by
// its ID (lua/lib_replay.lua, CALL_KEEP). A Store keeps records longer
// when its client may re-send a command later than that (callKeep): a
// delivery of a call after its record is gone runs again, and while the
// scripts' own checks (fence, checkpoint present) keep most calls from
// applying anything twice, an enqueue with a generated ID or a signal
// without a key would add a second job or signal.
const CallKeep = 60 * time.Second

// maxCallKeep bounds what a client's options can make callKeep: a client
// with timeouts turned off never re-sends on one.
const maxCallKeep = 15 * time.Minute

// callKeep is how long rdb may go on re-sending a command after Redis ran
// it, read from its options (a go-redis client whose options it cannot
// read is taken to have the defaults), with a margin, and at least
// CallKeep: a reply lost, then for each retry the wait for a pooled
// connection, the dials of a new one, the write and the read, and the
// backoff before it.
func callKeep(rdb redis.UniversalClient) time.Duration {
	retries, pool, dial, dials, dialGap, write, read, backoff := // go-redis v9.23's defaults
		3, 6*time.Second, 5*time.Second, 5, 100*time.Millisecond, 5*time.Second, 5*time.Second, time.Second
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		retries, pool, dial, dials, dialGap, write, read, backoff =
			o.MaxRetries, o.PoolTimeout, o.DialTimeout, o.DialerRetries, o.DialerRetryTimeout, o.WriteTimeout, o.ReadTimeout, o.MaxRetryBackoff
	case *redis.ClusterClient:
		// each of the cluster client's MaxRedirects+1 tries goes through
		// a node client that retries MaxRetries times itself
		o := c.Options()
		retries, pool, dial, dials, dialGap, write, read, backoff =
			(max(o.MaxRedirects, 0)+1)*(max(o.MaxRetries, 0)+1)-1, o.PoolTimeout, o.DialTimeout, o.DialerRetries, o.DialerRetryTimeout, o.WriteTimeout, o.ReadTimeout, o.MaxRetryBackoff
	}
	if read <= 0 || write <= 0 {
		return maxCallKeep // no timeout (go-redis: 0 or -1 once set up): a re-send may come at any time
	}
	retries, dials = max(retries, 0), max(dials, 1)
	if pool <= 0 {
		pool = read + time.Second // go-redis's default, which a cluster client's options leave unset
	}
	try := pool + time.Duration(dials)*(dial+dialGap) + write + read + backoff
	window := read + time.Duration(retries)*try
	return min(max(CallKeep, window+window/5), maxCallKeep)
}

// newCallID returns the ID of a new call: 128 random bits. A call's
// record answers any call with its ID in its partition for as long as it
// is kept, so two calls sharing one would lose the second (an enqueue
// answered with another batch's IDs adds nothing). With 64 bits, a
// partition running 5,000 calls a second, each record kept 150 s, would
// meet such a pair about once in 150 years; with 128, never.
func newCallID() string { return id128('n', rand.Uint64(), rand.Uint64()) }

// id128 is prefix and the 128 bits hi, lo in unpadded base64url: 22
// characters, none of them '~', which ends a call ID's own part
// (lua/lib_replay.lua).
func id128(prefix byte, hi, lo uint64) string {
	var raw [16]byte
	binary.BigEndian.PutUint64(raw[:8], hi)
	binary.BigEndian.PutUint64(raw[8:], lo)
	var b [1 + 22]byte
	b[0] = prefix
	base64.RawURLEncoding.Encode(b[1:], raw[:])
	return string(b[:])
}

// contentID hashes the parts that name a batch into its call ID: the same
// for a retry of the batch, which Sluice sends again itself (runtime's
// flushAcks), and different for any other batch, because the parts name
// each attempt by job ID, lease ID and fence, which no two attempts share
// (a claim raises the fence). It is 128-bit FNV-1a over each part and a
// zero byte after it, computed without allocating: the ack of every job
// pays it. 128 bits for the reason newCallID gives: two batches whose IDs
// met would answer the second with the first's record.
type contentID struct{ hi, lo uint64 }

// newContentID is FNV-1a's 128-bit offset basis.
func newContentID() contentID { return contentID{0x6c62272e07bb0142, 0x62b821756295c58d} }

// fnvPrimeLow is what FNV's 128-bit prime, 2^88 + 0x13b, has below 2^64.
const fnvPrimeLow = 0x13b

// add hashes part s.
func (h *contentID) add(s string) { *h = fnvPart(*h, s) }

// addBytes hashes part b.
func (h *contentID) addBytes(b []byte) { *h = fnvPart(*h, b) }

// fnvPart is h after part p and the zero byte that ends it.
func fnvPart[T string | []byte](h contentID, p T) contentID {
	for i := 0; i < len(p); i++ {
		h.lo ^= uint64(p[i])
		h = h.mulPrime()
	}
	return h.mulPrime()
}

// mulPrime is h times FNV's 128-bit prime, modulo 2^128: h times 0x13b,
// plus h shifted left by 88 bits (of which only lo's low 40 bits stay).
func (h contentID) mulPrime() contentID {
	carry, lo := bits.Mul64(h.lo, fnvPrimeLow)
	return contentID{h.hi*fnvPrimeLow + carry + h.lo<<24, lo}
}

// addInt hashes n as its decimal text.
func (h *contentID) addInt(n int64) {
	var buf [20]byte
	h.addBytes(strconv.AppendInt(buf[:0], n, 10))
}

// call is the call ID.
func (h contentID) call() string { return id128('c', h.hi, h.lo) }
