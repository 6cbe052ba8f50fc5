package lua

import (
	"strings"
	"testing"

	glua "github.com/yuin/gopher-lua"
)

// TestGopherShimReadsAsRedis: under gopher-lua, with gopherShim run
// first, tonumber reads each string as Redis 7.0's Lua read it (the
// answers, string.format('%.17g', tonumber(v)) or nil, were taken from
// EVAL on redis-server 7.0.15). Without the shim, gopher-lua answers nil
// for a decimal exponent with no '.' (as miniredis writes scores) and for
// an integer past 64 bits, 10.5 for '1_0.5' and -34 for '0x-22'. Known
// and left apart, all corrupt data only, which strtod reads and the shim
// does not: 'inf', 'nan', a decimal past the range ('1e309', infinity),
// a hex float ('0x1p4'), a sign before 0x, a hex integer of 2^63 or
// more, white space other than ' ', '\t' and '\n' around a number, and
// a NUL after one; and '-0', which gopher-lua reads as 0 (equal).
// tonumber with a base is gopher-lua's own (no script passes one).
func TestGopherShimReadsAsRedis(t *testing.T) {
	redis := map[string]string{
		"1e+8": "100000000", "1e+08": "100000000", "2e+12": "2000000000000", "0x-22": "nil", "0x+8": "nil", "5e-05": "5.0000000000000002e-05",
		"10000000000000000000": "1e+19", "12345678901234567890e0": "1.2345678901234567e+19", "-1e+08": "-100000000",
		"1_0.5": "nil", "1.7672e+12": "1767200000000", "1e5": "100000", "": "nil", "e5": "nil", "1e": "nil",
		"-": "nil", " 5": "5", "5 ": "5", "+5": "5", ".5": "0.5", "5.": "5", "0x10": "16",
		"00012": "12", "1e5 ": "100000", "  1e5": "100000", "1e5e5": "nil", "0x1e": "30", "1.5e3": "1500",
	}
	L := glua.NewState()
	defer L.Close()
	if err := L.DoString(gopherShim); err != nil {
		t.Fatal(err)
	}
	for v, want := range redis {
		L.SetGlobal("v", glua.LString(v))
		if err := L.DoString(`local n = tonumber(v) r = n == nil and 'nil' or string.format('%.17g', n)`); err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if got := L.GetGlobal("r").String(); got != want {
			t.Errorf("tonumber(%q) = %s under the shim; Redis's Lua: %s", v, got, want)
		}
	}
	// a base, or a number, goes to tonumber as it is
	if err := L.DoString(`r = tostring(tonumber('ff', 16)) .. ' ' .. tostring(tonumber(7))`); err != nil {
		t.Fatal(err)
	}
	if got := L.GetGlobal("r").String(); got != "255 7" {
		t.Errorf("tonumber('ff', 16), tonumber(7) = %s", got)
	}
	// the EVAL text of every script opens with it
	for name, sc := range All() {
		if !strings.HasPrefix(sc.m().src, gopherShim) {
			t.Errorf("%s's EVAL text does not open with gopherShim", name)
		}
	}
}
