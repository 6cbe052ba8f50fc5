package store

import (
	"hash/fnv"
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

// contentCallID is the call ID of a batch named by parts: the same for a
// retry of the batch, which Sluice sends again itself (runtime's
// flushAcks), and different for any other batch, because the parts name
// each attempt by job ID, lease ID and fence, which no two attempts share
// (a claim raises the fence).
func contentCallID(parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return "c" + strconv.FormatUint(h.Sum64(), 36)
}
