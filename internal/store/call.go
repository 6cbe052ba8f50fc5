package store

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// CallKeep is how long a script remembers the reply of a call by its ID
// (lua/lib_replay.lua, CALL_KEEP): longer than go-redis re-sends a
// command (its retries with their backoff and timeouts end within about
// 25 s). A later delivery of the same call runs again, where each
// script's own checks (fence, checkpoint present) keep it from applying
// anything twice.
const CallKeep = 60 * time.Second

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
