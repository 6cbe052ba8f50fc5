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
// (as Redis 7.0's ZADD answered each of these: C's strtod, whole, with
// no overflow, no underflow and no NaN).
func TestIsScoreAsRedis(t *testing.T) {
	takes := []string{"1", "+5", "-0", "00012", "5.", ".5", "1.e2", "1e5", "1E+5", "+.5e-3", "1e-310",
		"inf", "INF", "-inf", "-Infinity", "+INFINITY",
		"0x10", "0x1.8", "0x1.p0", "0x1p0", "0X1P-2", "0x1P+2", "0x.8", "0x.8p1", "0x1e", "0xEp1",
		"0x0p5", "0x0.0p-3000", "0x1P-1074"}
	refuses := []string{"", "+", ".", "5e", "1e+", "1e5 ", " 1", "1.5e3.2", "+-1", "-+1", "nan", "NaN", "infinit",
		"1_000", "1_0.5", "0x_1p0", "0x1_0", "1e1_0", "0b1", "0o7", "00x1",
		"0x", "0x.p1", "0x1p", "0x1p+", "1e-400", "-1e400", "0x1p1024", "-0x1p-1100", "0xep-2000"}
	for _, v := range takes {
		if !isScore(v) {
			t.Errorf("isScore(%q) = false; Redis takes it", v)
		}
	}
	for _, v := range refuses {
		if isScore(v) {
			t.Errorf("isScore(%q) = true; Redis refuses it", v)
		}
	}
}
