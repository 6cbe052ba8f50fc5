package keys_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// TestLuaKeysAgree: every key family the Lua prelude names (a helper
// "local function f(x) return PFX .. 'suffix' .. x end", or a constant
// "local NAME = PFX .. 'suffix'", or the call's own record's, "local
// NAME = PFX .. 'suffix' .. CALL_ID") has a Go builder here that names the
// same key. A family added to one side only fails here.
func TestLuaKeysAgree(t *testing.T) {
	p := keys.Partition{NS: "ns", Queue: "q", Index: 3}
	const x = "X"
	builders := map[string]string{
		"job_key": p.Job(x), "err_key": p.Errors(x), "steps_key": p.Steps(x), "body_key": p.Body(x),
		"kids_key": p.Kids(x), "kidcount_key": p.KidCount(x),
		"unique_key": p.Unique(x), "rate_key": p.RateBucket(x), "ratewait_key": p.RateWait(x), "ratego_key": p.RateLetGo(x),
		"ccwait_key": p.ConcurrencyWait(x), "CC_WAITING": p.ConcurrencyWaiting(), "pin_key": p.Pinned(x),
		"PIN_DEADLINES": p.PinDeadlines(), "PIN_WORKERS": p.PinWorkers(), "PAUSED": p.Paused(), "minute_key": p.Minute(7),
		"DEATHS": p.Deaths(), "hold_key": p.QuarantineHold(x), "held_key": p.HeldOn(x), "hold_next_key": p.HoldNext(x),
		"followup_key": p.FollowUp(x), "notemark_key": p.NoteMark(x), "CALL_KEY": p.Call(x), "PM_KEY": p.Priorities(),
		"WATCHING": p.Watching(), "DONE_CHANNEL": p.DoneChannel(),
		"later_key": p.LaterBucket(x), "MODEL_KEY": p.DataModel(),
	}
	args := map[string]string{"minute_key": "7"}
	fn := regexp.MustCompile(`(?m)^local function (\w+)\((\w*)\) return PFX \.\. '([^']+)' \.\. (\w+) end`)
	konst := regexp.MustCompile(`(?m)^local (\w+) = PFX \.\. '([^']+)'$`)
	// a key of the call's own, named by its ID (lib_replay.lua)
	ofCall := regexp.MustCompile(`(?m)^local (\w+) = PFX \.\. '([^']+)' \.\. CALL_ID$`)
	// a channel named by the partition's tag without its braces
	channel := regexp.MustCompile(`(?m)^local (\w+) = string\.sub\(PFX, 2, -3\) \.\. '([^']+)'$`)
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
	for _, m := range channel.FindAllStringSubmatch(src, -1) {
		seen++
		if got, want := strings.Trim(p.Tag(), "{}")+m[2], builders[m[1]]; got != want {
			t.Errorf("%s: Lua names %q, Go %q", m[1], got, want)
		}
	}
	for _, m := range ofCall.FindAllStringSubmatch(src, -1) {
		check(m[1], m[2], x)
	}
	if seen != len(builders) {
		t.Errorf("found %d Lua key families, the table has %d", seen, len(builders))
	}
}

// asideKind finds the kind of what the Lua scripts set aside: the literal
// '<kind>:' that starts set_aside's what, call_aside's aside, or the
// aside call_aside makes itself.
var asideKind = regexp.MustCompile(`(?:set_aside\([^,\n]+, |call_aside\('\w+', [^,\n]+, |aside = |aside or )'([^':]*):'`)

// TestLuaPartitionKeysAgree: the names partition_keys (lib.lua) makes for
// a call that declares sched alone are Go's KEYS (keys.Partition.Script),
// in their order.
func TestLuaPartitionKeysAgree(t *testing.T) {
	p := keys.Partition{NS: "ns", Queue: "q", Index: 3}
	body := regexp.MustCompile(`(?s)local function partition_keys\(.*?local t = \{(.*?)\}`).FindStringSubmatch(lua.Prelude())
	if body == nil {
		t.Fatal("partition_keys's list of names not found in the prelude")
	}
	var got []string
	for _, m := range regexp.MustCompile(`'([^']*)'`).FindAllStringSubmatch(body[1], -1) {
		got = append(got, p.Prefix()+m[1])
	}
	if want := p.Script(); !slices.Equal(got, want) {
		t.Errorf("Lua names the partition's keys\n%q\nGo\n%q", got, want)
	}
}

// TestLuaRunAnchorAgrees: the running index's anchor is Go's, and too
// long for a listpack's member at Redis's default (64 bytes).
func TestLuaRunAnchorAgrees(t *testing.T) {
	m := regexp.MustCompile(`(?m)^local RUN_ANCHOR = '([^']*)'$`).FindStringSubmatch(lua.Prelude())
	if m == nil {
		t.Fatal("RUN_ANCHOR not found in the prelude")
	}
	if m[1] != keys.RunAnchor {
		t.Errorf("Lua's anchor %q, Go's %q", m[1], keys.RunAnchor)
	}
	if len(keys.RunAnchor) <= 64 || !strings.Contains(keys.RunAnchor, " ") {
		t.Errorf("the anchor must be longer than 64 bytes, with a space (no ID has one): %q", keys.RunAnchor)
	}
}

// TestAsideKindsAgree: every kind under which a script sets a key aside is
// one of Go's (keys.Aside...), and each of Go's is used.
func TestAsideKindsAgree(t *testing.T) {
	goKinds := map[string]bool{keys.AsideJob: false, keys.AsideShared: false, keys.AsideList: false,
		keys.AsideLater: false, keys.AsideCCWait: false, keys.AsideRateWait: false}
	for name, src := range lua.Files() {
		for _, m := range asideKind.FindAllStringSubmatch(src, -1) {
			if _, ok := goKinds[m[1]]; !ok {
				t.Errorf("%s sets a key aside under kind %q, which Go does not name", name, m[1])
			}
			goKinds[m[1]] = true
		}
	}
	for k, used := range goKinds {
		if !used {
			t.Errorf("no script sets a key aside under Go's kind %q", k)
		}
	}
}

// TestAsideNamesApart: no two set-aside names are the same, whatever the
// names hold: a job ID may spell another kind's name ("list:a",
// "k:stats", "later:1") or a number ("#2:a"), and so may a concurrency
// key or a rate class.
func TestAsideNamesApart(t *testing.T) {
	p := keys.Partition{NS: "ns", Queue: "q", Index: 0}
	kinds := []string{keys.AsideJob, keys.AsideShared, keys.AsideList, keys.AsideLater, keys.AsideCCWait, keys.AsideRateWait}
	var names []string
	for _, k := range kinds {
		names = append(names, k+":a", k+"#2:a", k+":"+p.Prefix()+"avail:0", k)
	}
	names = append(names, "a", "#2:a", "2:a", "a#2", "stats", ":a", "", "x:j:a")
	seen := map[string]string{}
	for _, k := range kinds {
		for _, n := range names {
			for i := 1; i <= 3; i++ {
				key := p.Aside(k, n, i)
				what := k + " " + strconv.Quote(n) + " #" + strconv.Itoa(i)
				if other, ok := seen[key]; ok {
					t.Errorf("%s and %s are both set aside as %s", other, what, key)
				}
				seen[key] = what
			}
		}
	}
	if got, want := p.Aside(keys.AsideJob, "list:a", 1), "{ns:q:0}:x:j:list:a"; got != want {
		t.Errorf("job list:a set aside as %s, want %s", got, want)
	}
	if got, want := p.Aside(keys.AsideShared, "stats", 3), "{ns:q:0}:x:k#3:stats"; got != want {
		t.Errorf("stats set aside the third time as %s, want %s", got, want)
	}
}
