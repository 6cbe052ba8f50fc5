package store_test

// Rate classes' promises in TestFlowModel (flowmodel_test.go): a waiter
// its class let go to a ready list holds a token promised to it until its
// claim (lua/lib_limits.lua promise). Checked after every step
// (checkPromises), from a direct read of each class's promises and token
// bucket:
//
//   - a promise standing (scored after the store's time) names an
//     available job of that class, listed on a ready list (shared or a
//     worker's pin list), not waiting;
//   - a class never promises more tokens than its bucket holds at that
//     time: a claim spends a token only if the bucket holds one beyond
//     those promised to others, and a pass promises only such tokens;
//   - a class's promises key, when there is one, expires (a minute after
//     its last promise): a key made again within a call after a removal
//     emptied it must be given its expiry again.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// flowPromises are the classes' promises and buckets at a snapshot.
type flowPromises struct {
	live   map[string]map[string]int64 // class -> job -> when its promise lapses (ms)
	tokens map[string]float64          // class -> tokens its bucket holds now; absent: no bucket
	ttl    map[string]time.Duration    // class -> its promises key's PTTL (-2: no key, -1: no expiry)
}

// readPromises reads each class's promises and bucket into s.
func (r *flowRun) readPromises(s *fsnap) {
	ctx := r.ctx
	zs := map[string]*redis.ZSliceCmd{}
	bs := map[string]*redis.SliceCmd{}
	ts := map[string]*redis.DurationCmd{}
	_, err := r.direct.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for _, c := range flowRClass {
			zs[c] = pl.ZRangeWithScores(ctx, r.p.RateLetGo(c), 0, -1)
			bs[c] = pl.HMGet(ctx, r.p.RateBucket(c), "t", "u", "n", "p", "b")
			ts[c] = pl.PTTL(ctx, r.p.RateLetGo(c))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		r.fail("reading promises: %v", err)
	}
	now := float64(r.now())
	s.promises = &flowPromises{live: map[string]map[string]int64{}, tokens: map[string]float64{}, ttl: map[string]time.Duration{}}
	for _, c := range flowRClass {
		s.promises.ttl[c] = ts[c].Val()
		live := map[string]int64{}
		for _, z := range zs[c].Val() {
			if z.Score > now {
				live[z.Member.(string)] = int64(z.Score)
			}
		}
		s.promises.live[c] = live
		v := bs[c].Val()
		num := func(k int) float64 {
			x, _ := v[k].(string)
			f, err := strconv.ParseFloat(x, 64)
			if err != nil {
				return math.NaN()
			}
			return f
		}
		t, u, n, per, burst := num(0), num(1), num(2), num(3), num(4)
		if math.IsNaN(t) || math.IsNaN(u) || math.IsNaN(n) || math.IsNaN(per) || math.IsNaN(burst) {
			continue
		}
		s.promises.tokens[c] = math.Min(burst, t+math.Max(now-u, 0)*n/per)
	}
}

// checkPromises returns the promise invariants s breaks.
func (r *flowRun) checkPromises(s *fsnap) []string {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	for _, c := range flowRClass {
		live := s.promises.live[c]
		r.counts["promised"] += len(live)
		for id, at := range live {
			g, known := s.jobs[id]
			if !known || !g.exists || g.state != "available" || g.rc != c {
				add("class %s promises a token to job %s (until %d), which is %s of class %q", c, id, at, orGone(g), g.rc)
				continue
			}
			for name, m := range s.lists.entries {
				if m[id] > 0 && !strings.HasPrefix(name, "av") && !strings.HasPrefix(name, "pin:") {
					add("class %s promises a token to job %s, listed on %s", c, id, name)
				}
			}
		}
		if s.promises.ttl[c] == -1 {
			add("class %s's promises key (%v) has no expiry", c, live)
		}
		if tokens, ok := s.promises.tokens[c]; ok && float64(len(live)) > tokens+1e-9 {
			add("class %s promises %d tokens (%v), its bucket holds %.3f", c, len(live), live, tokens)
		}
	}
	return bad
}
