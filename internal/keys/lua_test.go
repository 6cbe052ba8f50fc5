package keys_test

import (
	"regexp"
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// TestLuaKeysAgree: every key family the Lua prelude names (a helper
// "local function f(x) return PFX .. 'suffix' .. x end", or a constant
// "local NAME = PFX .. 'suffix'") has a Go builder here that names the
// same key. A family added to one side only fails here.
func TestLuaKeysAgree(t *testing.T) {
	p := keys.Partition{NS: "ns", Queue: "q", Index: 3}
	const x = "X"
	builders := map[string]string{
		"job_key": p.Job(x), "err_key": p.Errors(x), "steps_key": p.Steps(x), "body_key": p.Body(x),
		"kids_key": p.Kids(x), "kidcount_key": p.KidCount(x), "corrupt_key": p.Corrupt(x),
		"unique_key": p.Unique(x), "rate_key": p.RateBucket(x), "ratewait_key": p.RateWait(x),
		"ccwait_key": p.ConcurrencyWait(x), "CC_WAITING": p.ConcurrencyWaiting(), "pin_key": p.Pinned(x),
		"PIN_DEADLINES": p.PinDeadlines(), "PAUSED": p.Paused(), "minute_key": p.Minute(7),
		"DEATHS": p.Deaths(), "hold_key": p.QuarantineHold(x), "held_key": p.HeldOn(x),
		"followup_key": p.FollowUp(x), "call_key": p.Call(x), "PM_KEY": p.Priorities(),
		"WATCHING": p.Watching(), "DONE_CHANNEL": p.DoneChannel(),
		"later_key": p.LaterBucket(x), "MODEL_KEY": p.DataModel(),
	}
	args := map[string]string{"minute_key": "7", "call_key": x}
	fn := regexp.MustCompile(`(?m)^local function (\w+)\((\w*)\) return PFX \.\. '([^']+)' \.\. (\w+) end`)
	konst := regexp.MustCompile(`(?m)^local (\w+) = PFX \.\. '([^']+)'$`)
	src := lua.Prelude()
	seen := 0
	check := func(name, suffix, arg string) {
		seen++
		want, ok := builders[name]
		if !ok {
			t.Errorf("Lua key %s (%q) has no Go builder in this test's table", name, suffix)
			return
		}
		if got := p.Prefix() + suffix + arg; got != want {
			t.Errorf("%s: Lua names %q, Go %q", name, got, want)
		}
	}
	for _, m := range fn.FindAllStringSubmatch(src, -1) {
		arg, ok := args[m[1]]
		if !ok {
			arg = x
		}
		check(m[1], m[3], arg)
	}
	for _, m := range konst.FindAllStringSubmatch(src, -1) {
		check(m[1], m[2], "")
	}
	if seen != len(builders) {
		t.Errorf("found %d Lua key families, the table has %d", seen, len(builders))
	}
}
