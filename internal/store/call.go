package store

import (
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

// newCallID returns the ID of a new call: 64 random bits, so that two
// calls never share one.
func newCallID() string { return strconv.FormatUint(rand.Uint64(), 36) }

// contentID hashes the parts that name a batch into its call ID: the same
// for a retry of the batch, which Sluice sends again itself (runtime's
// flushAcks), and different for any other batch, because the parts name
// each attempt by job ID, lease ID and fence, which no two attempts share
// (a claim raises the fence). It is FNV-1a over each part and a zero byte
// after it, computed without allocating: the ack of every job pays it.
type contentID uint64

func newContentID() contentID { return 14695981039346656037 } // FNV-1a's offset basis

const fnvPrime = 1099511628211

// add hashes part s.
func (h *contentID) add(s string) { *h = fnvPart(*h, s) }

// addBytes hashes part b.
func (h *contentID) addBytes(b []byte) { *h = fnvPart(*h, b) }

// fnvPart is h after part p and the zero byte that ends it.
func fnvPart[T string | []byte](h contentID, p T) contentID {
	for i := 0; i < len(p); i++ {
		h = (h ^ contentID(p[i])) * fnvPrime
	}
	return h * fnvPrime
}

// addInt hashes n as its decimal text.
func (h *contentID) addInt(n int64) {
	var buf [20]byte
	h.addBytes(strconv.AppendInt(buf[:0], n, 10))
}

// call is the call ID.
func (h contentID) call() string { return "c" + strconv.FormatUint(uint64(h), 36) }
