package store

import (
	"testing"

	"github.com/sluicehq/sluice/sluicetype"
)

// TestZAddScoreUnderscore: validateEffect is to refuse, before
// anything is written, what lua/lib_effects.lua refuses (and Redis's ZADD:
// "ERR value is not a valid float"). strconv.ParseFloat reads Go's digit
// separators ("1_000" is 1000), so isScore takes scores that Lua's
// score_ok and Redis refuse: an effect on a key in the job's slot is
// refused only by the commit script, and one on a key in another slot is
// not checked there at all (outboxed effects carry no op to check):
// the commit succeeds and the relay dead-letters the write.
func TestZAddScoreUnderscore(t *testing.T) {
	for _, score := range []string{"1_000", "1_0.5", "0x_1p0"} {
		e := sluicetype.Effect{Op: "ZADD", Key: "{elsewhere}:board", Args: []string{score, "m"}}
		if err := validateEffect(e); err == nil {
			t.Errorf("ZADD score %q: accepted; Redis refuses it (not a valid float)", score)
		}
	}
}

// TestIsScoreAsRedis: isScore takes exactly the ZADD scores Redis takes
// (ScoresRedisTakes, ScoresRedisRefuses).
func TestIsScoreAsRedis(t *testing.T) {
	for _, v := range ScoresRedisTakes {
		if !isScore(v) {
			t.Errorf("isScore(%q) = false; Redis takes it", v)
		}
	}
	for _, v := range ScoresRedisRefuses {
		if isScore(v) {
			t.Errorf("isScore(%q) = true; Redis refuses it", v)
		}
	}
}
