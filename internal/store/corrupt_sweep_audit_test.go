package store_test

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// The audit and the snapshot of TestCorruptDataIsItsJobsAlone
// (corrupt_sweep_test.go): what the data model promises of every job the
// sweep knows, read in a few pipelined round trips whatever the keys hold
// (a read of a corrupt key counts as an empty one).

// corruptTypes are the types of the sweep writes is: a value of
// one of these types.
var corruptTypes = []string{"string", "hash", "list", "zset"}

// writeCorrupt replaces key's value with a small value of type typ.
func (s *sweep) writeCorrupt(key, typ string) {
	s.t.Helper()
	_, err := s.rdb.TxPipelined(s.ctx, func(pl redis.Pipeliner) error {
		pl.Del(s.ctx, key)
		switch typ {
		case "string":
			pl.Set(s.ctx, key, "overwritten", 0)
		case "hash":
			pl.HSet(s.ctx, key, "overwritten", "1")
		case "list":
			pl.RPush(s.ctx, key, "overwritten")
		case "zset":
			pl.ZAdd(s.ctx, key, redis.Z{Score: 1, Member: "overwritten"})
		default:
			s.t.Fatalf("no corrupt value of type %q", typ)
		}
		return nil
	})
	if err != nil {
		s.t.Fatal(err)
	}
}

// destroy overwrites key with a value of type typ, first noting the jobs
// whose place the overwrite takes away (the members of a list or zset it
// held, the jobs of the buckets a later zset named, the job a job key
// held): the test, not a script, lost those.
func (s *sweep) destroy(key, typ string) {
	s.t.Helper()
	if id, ok := strings.CutPrefix(key, s.p.Job("")); ok {
		s.destroyed[id] = true
	}
	var members []string
	switch s.rdb.Type(s.ctx, key).Val() {
	case "list":
		members = s.rdb.LRange(s.ctx, key, 0, -1).Val()
	case "zset":
		members = s.rdb.ZRange(s.ctx, key, 0, -1).Val()
		if key == s.p.Later() {
			for _, b := range slices.Clone(members) {
				members = append(members, s.rdb.LRange(s.ctx, s.p.LaterBucket(b), 0, -1).Val()...)
			}
		}
	case "hash":
		if key == s.p.Stats() || key == s.p.Concurrency() {
			break
		}
		members = s.rdb.HKeys(s.ctx, key).Val()
	}
	for _, m := range members {
		s.destroyed[m] = true
	}
	s.writeCorrupt(key, typ)
}

// fieldAbsent, as a field's value in the sweep, deletes the field: a
// reader meets nothing where it expects a value (a link half gone).
const fieldAbsent = "(absent)"

// setField sets field of every bad job's hash (those that still have
// one) to v (fieldAbsent: deletes it).
func (s *sweep) setField(field, v string) {
	s.t.Helper()
	types := make([]*redis.StatusCmd, len(s.bad))
	_, _ = s.rdb.Pipelined(s.ctx, func(pl redis.Pipeliner) error {
		for i, id := range s.bad {
			types[i] = pl.Type(s.ctx, s.p.Job(id))
		}
		return nil
	})
	if _, err := s.rdb.Pipelined(s.ctx, func(pl redis.Pipeliner) error {
		for i, id := range s.bad {
			switch {
			case types[i].Val() != "hash":
			case v == fieldAbsent:
				pl.HDel(s.ctx, s.p.Job(id), field)
			default:
				pl.HSet(s.ctx, s.p.Job(id), field, v)
			}
		}
		return nil
	}); err != nil {
		s.t.Fatal(err)
	}
}

// node is the client that reaches the partition's keys by name (KEYS): on
// a cluster, the master of their slot.
func (s *sweep) node() redis.Cmdable {
	s.t.Helper()
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		n, err := cc.MasterForKey(s.ctx, s.p.Stats())
		if err != nil {
			s.t.Fatal(err)
		}
		return n
	}
	return s.rdb
}

// snapshot reads every key of the partition as its type, content and
// whether it expires, by name.
func (s *sweep) snapshot() map[string]string {
	s.t.Helper()
	c := s.node()
	names, err := c.Keys(s.ctx, s.p.Prefix()+"*").Result()
	if err != nil {
		s.t.Fatal(err)
	}
	// a call's reply record (rc:) is no state: a clean refusal is
	// recorded, so that its re-send is answered alike
	names = slices.DeleteFunc(names, func(k string) bool { return strings.HasPrefix(k, s.p.Call("")) })
	sort.Strings(names)
	if s.dump {
		// a real Redis: each key's serialized value (DUMP) and whether it
		// expires, in one round trip
		dumps := make([]*redis.StringCmd, len(names))
		ttls := make([]*redis.DurationCmd, len(names))
		_, _ = c.Pipelined(s.ctx, func(pl redis.Pipeliner) error {
			for i, k := range names {
				dumps[i] = pl.Dump(s.ctx, k)
				ttls[i] = pl.PTTL(s.ctx, k)
			}
			return nil
		})
		out := make(map[string]string, len(names))
		for i, k := range names {
			out[k] = fmt.Sprintf("%q expires:%v", dumps[i].Val(), ttls[i].Val() >= 0)
		}
		return out
	}
	types := make([]*redis.StatusCmd, len(names))
	if _, err := c.Pipelined(s.ctx, func(pl redis.Pipeliner) error {
		for i, k := range names {
			types[i] = pl.Type(s.ctx, k)
		}
		return nil
	}); err != nil {
		s.t.Fatal(err)
	}
	vals := make([]redis.Cmder, len(names))
	ttls := make([]*redis.DurationCmd, len(names))
	_, _ = c.Pipelined(s.ctx, func(pl redis.Pipeliner) error {
		for i, k := range names {
			switch types[i].Val() {
			case "string":
				vals[i] = pl.Get(s.ctx, k)
			case "hash":
				vals[i] = pl.HGetAll(s.ctx, k)
			case "list":
				vals[i] = pl.LRange(s.ctx, k, 0, -1)
			case "zset":
				vals[i] = pl.ZRangeWithScores(s.ctx, k, 0, -1)
			case "set":
				vals[i] = pl.SMembers(s.ctx, k)
			case "stream":
				vals[i] = pl.XRange(s.ctx, k, "-", "+")
			}
			ttls[i] = pl.PTTL(s.ctx, k)
		}
		return nil
	})
	out := make(map[string]string, len(names))
	for i, k := range names {
		v := "?"
		if vals[i] != nil {
			v = fmt.Sprint(cmdVal(vals[i]))
		}
		out[k] = types[i].Val() + " " + v + " expires:" + strconv.FormatBool(ttls[i].Val() >= 0)
	}
	return out
}

// cmdVal is a read's value (a map printed sorted by fmt).
func cmdVal(c redis.Cmder) any {
	switch c := c.(type) {
	case *redis.StringCmd:
		return c.Val()
	case *redis.MapStringStringCmd:
		return c.Val()
	case *redis.StringSliceCmd:
		return c.Val()
	case *redis.ZSliceCmd:
		return c.Val()
	case *redis.XMessageSliceCmd:
		return c.Val()
	}
	return c.String()
}

// snapshotDiff lists the keys whose value differs between a and b.
func snapshotDiff(a, b map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if w, ok := b[k]; !ok {
			out = append(out, "deleted "+k+" ("+short(a[k])+")")
		} else if w != a[k] {
			out = append(out, "changed "+k+": "+short(a[k])+" -> "+short(w))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			out = append(out, "created "+k+" ("+short(b[k])+")")
		}
	}
	return out
}

func short(s string) string {
	if len(s) > 160 {
		return s[:160] + "..."
	}
	return s
}

// jobView is what the audit read of one job.
type jobView struct {
	hash                  bool // its key holds a hash
	state                 string
	prio, sw, sf, ck, rk  string
	hasSW, hasCK, hasRK   bool
	inZ                   map[string]bool // zsets holding it (sched: or a bucket of later jobs)
	avail                 map[int]int     // entries in the available list of each priority
	pinned, waiting, held int             // entries in pin lists, wait lists, hold lists
	inBucket              bool
}

// audit reads every job the sweep knows and checks the data model's
// invariants for the healthy ones (and, unless shared, for the partition's
// state counts), and that no bad job is lost: each that has a hash is in
// an index its state names. It returns what is wrong.
func (s *sweep) audit() []string {
	ctx := s.ctx
	ids := append(slices.Clone(s.healthy), s.bad...)
	zsets := map[string]string{
		"scheduled": s.p.Sched(), "running": s.p.Running(), "completed": s.p.Terminal("completed"),
		"archived": s.p.Terminal("archived"), "quarantined": s.p.Terminal("quarantined"), "cancelled": s.p.Terminal("cancelled"),
	}
	zkeys := slices.Sorted(maps.Values(zsets))
	hc := make([]*redis.SliceCmd, len(ids))
	zc := make([]*redis.StringSliceCmd, len(zkeys))
	var laterC *redis.StringSliceCmd
	var statsC *redis.MapStringStringCmd
	var pmC *redis.StringCmd
	_, _ = s.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, id := range ids {
			hc[i] = pl.HMGet(ctx, s.p.Job(id), keys.FieldState, keys.FieldPriority, keys.FieldStickyWorker,
				keys.FieldStickyFallback, keys.FieldConcurrencyKey, keys.FieldRateClass)
		}
		for i, z := range zkeys {
			zc[i] = pl.ZRange(ctx, z, 0, -1)
		}
		laterC = pl.ZRange(ctx, s.p.Later(), 0, -1)
		statsC = pl.HGetAll(ctx, s.p.Stats())
		pmC = pl.Get(ctx, s.p.Priorities())
		return nil
	})
	views := map[string]*jobView{}
	lists := map[string]string{} // list key -> kind: avail:<p>, pin, wait, held, bucket
	for p := range keys.Priorities {
		lists[s.p.Available(p)] = "avail:" + strconv.Itoa(p)
	}
	for _, k := range []string{"k", "kb"} {
		lists[s.p.ConcurrencyWait(k)] = "wait"
	}
	for _, r := range []string{"r", "rb"} {
		lists[s.p.RateWait(r)] = "wait"
	}
	lists[s.p.HeldOn("fpb")] = "held"
	lists[s.p.HeldOn("fp")] = "held"
	for i, id := range ids {
		v := &jobView{inZ: map[string]bool{}, avail: map[int]int{}}
		views[id] = v
		h, err := hc[i].Result()
		if err != nil || len(h) != 6 {
			continue
		}
		str := func(k int) (string, bool) { x, ok := h[k].(string); return x, ok }
		var ok bool
		if v.state, ok = str(0); !ok {
			continue // no hash (or no state: an empty key reads as none)
		}
		v.hash, v.state = true, store.StateName(v.state)
		v.prio, _ = str(1)
		v.sw, v.hasSW = str(2)
		v.sf, _ = str(3)
		v.ck, v.hasCK = str(4)
		v.rk, v.hasRK = str(5)
		if v.hasSW {
			lists[s.p.Pinned(v.sw)] = "pin"
		}
		if v.hasCK {
			lists[s.p.ConcurrencyWait(v.ck)] = "wait"
		}
		if v.hasRK {
			lists[s.p.RateWait(v.rk)] = "wait"
		}
	}
	for _, w := range []string{"w", "wp", "wb"} {
		lists[s.p.Pinned(w)] = "pin"
	}
	for _, b := range laterC.Val() {
		lists[s.p.LaterBucket(b)] = "bucket"
	}
	lkeys := slices.Sorted(maps.Keys(lists))
	lc := make([]*redis.StringSliceCmd, len(lkeys))
	_, _ = s.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, k := range lkeys {
			lc[i] = pl.LRange(ctx, k, 0, -1)
		}
		return nil
	})
	for i, z := range zkeys {
		for _, id := range zc[i].Val() {
			if v := views[id]; v != nil {
				v.inZ[z] = true
			}
		}
	}
	for i, k := range lkeys {
		kind := lists[k]
		for _, id := range lc[i].Val() {
			v := views[id]
			if v == nil {
				continue
			}
			switch {
			case strings.HasPrefix(kind, "avail:"):
				p, _ := strconv.Atoi(strings.TrimPrefix(kind, "avail:"))
				v.avail[p]++
			case kind == "pin":
				v.pinned++
			case kind == "wait":
				v.waiting++
			case kind == "held":
				v.held++
			case kind == "bucket":
				v.inBucket = true
			}
		}
	}

	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	mask, maskErr := pmC.Bytes()
	counts := map[string]int{}
	for _, id := range s.healthy {
		v := views[id]
		if !v.hash {
			if s.born[id] && !s.gone[id] {
				bad("healthy %s is lost: its key holds no job hash", id)
			}
			continue
		}
		counts[v.state]++
		if s.c.shared {
			continue
		}
		for st, z := range zsets {
			want := st == v.state || (st == "scheduled" && v.state == "retryable")
			if st == "scheduled" && (v.state == "scheduled" || v.state == "retryable") {
				if !v.inZ[z] && !v.inBucket {
					bad("healthy %s is %s but in neither sched nor a bucket of later jobs", id, v.state)
				}
				continue
			}
			if v.inZ[z] != want {
				bad("healthy %s is %s, and in %s: %v", id, v.state, z, v.inZ[z])
			}
		}
		if v.state != "available" {
			continue
		}
		listed := v.pinned
		for p, n := range v.avail {
			listed += n
			if want := prioOf(v.prio); p != want {
				bad("healthy %s (priority %s) is in the list of priority %d", id, v.prio, p)
			} else if p > 0 && maskErr == nil && !maskBit(mask, p) {
				bad("healthy %s is available at priority %d, which the priority mask %08b does not flag", id, p, mask)
			}
		}
		switch {
		case listed > 1:
			bad("healthy %s is available with %d entries in the ready and pin lists (%v, pinned %d)", id, listed, v.avail, v.pinned)
		case listed == 0 && v.waiting == 0:
			bad("healthy %s is available on no list: no claim will find it", id)
		case v.hasSW && v.sf == "" && v.pinned == 0 && v.waiting == 0:
			bad("healthy %s prefers worker %s but is not on its pin list (%v)", id, v.sw, v.avail)
		}
	}
	for _, id := range s.bad {
		v := views[id]
		if !v.hash {
			continue
		}
		counts[v.state]++
		if s.destroyed[id] {
			continue
		}
		where := ""
		switch v.state {
		case "scheduled", "retryable":
			if !v.inZ[s.p.Sched()] && !v.inBucket && v.held == 0 {
				where = "sched or a bucket of later jobs"
			}
		case "available":
			if len(v.avail) == 0 && v.pinned == 0 && v.waiting == 0 {
				where = "a ready, pin or wait list"
			}
		case "running", "completed", "archived", "quarantined", "cancelled":
			if z := zsets[v.state]; !v.inZ[z] {
				where = z
			}
		default:
			if len(v.inZ) == 0 && len(v.avail) == 0 && v.pinned+v.waiting+v.held == 0 && !v.inBucket {
				where = "any index"
			}
		}
		if where != "" {
			bad("damaged %s is lost: it is %s, and not in %s", id, v.state, where)
		}
	}
	if !s.c.shared && !s.c.noStats && statsC.Err() == nil {
		sv := statsC.Val()
		for _, st := range modelStates {
			got, _ := strconv.Atoi(sv[st])
			if got != counts[st] {
				bad("stats %s = %q, but %d jobs are %s", st, sv[st], counts[st], st)
			}
		}
	}
	return out
}

// prioOf is the list a priority field puts an available job on (lib_ready
// priority_of), for a whole number; -1 for anything else.
func prioOf(v string) int {
	if v == "" {
		return 0
	}
	p, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	if p < 0 || p > 9 {
		return 0
	}
	return p
}
