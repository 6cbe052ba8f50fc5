package lua

import (
	"regexp"
	"strings"
	"testing"
)

// Two library calls put every value of a table on Lua's stack at once:
// unpack(t), and gopher-lua's table.concat (miniredis), which pushes each
// part, and each separator, onto its registry. Redis's Lua stack holds
// about 8,000 values ("too many results to unpack"), gopher-lua's
// registry about 5,100 ("registry overflow"), and either raises in the
// middle of a script, after the writes before it: a claim of 90 jobs on
// miniredis raised while packing its reply, its leases written. So:
//
//   - every unpack names the range it takes (unpack(t, i, j), a thousand
//     values at a time where a table may be long), or is one of
//     boundedUnpacks, which says what bounds its table;
//   - every table.concat is join's (lib.lua), which takes a thousand
//     parts at a time, or one of boundedConcats.
//
// internal/store TestClaimManyConcurrencyKeys claims and acks 8,200 jobs
// with concurrency keys on every backend.

// boundedUnpacks are the unpacks of a whole table, by file and text, with
// what bounds the table.
var boundedUnpacks = map[string]string{
	"enqueue.lua unpack(f)":          "one job's fields: its options, at most about 40",
	"lib_enqueue.lua unpack(f)":      "one job's fields, as in enqueue.lua",
	"lib_enqueue.lua unpack(stale)":  "the option fields a replacing enqueue drops, at most about 20",
	"lib_offer.lua unpack(f)":        "the lease fields of one pushed job",
	"heartbeat.lua unpack(ARGV, 5)":  "a worker's registry fields, a dozen, from Go",
	"list.lua unpack(FIELDS)":        "a constant list of job fields",
	"lib_effects.lua unpack(e.args)": "a non-variadic effect's few arguments, or an XADD's, at most MAX_XADD_ARGS (1,001): the variadic ones are written by call_chunked",
}

// boundedConcats are the table.concat calls outside join, with what
// bounds their parts.
var boundedConcats = map[string]string{
	"lib_pack.lua table.concat(b)": "be_bytes: the bytes of one integer, at most 8",
}

var (
	unpackCall = regexp.MustCompile(`(?:^|[^.\w])unpack\(`)
	concatCall = regexp.MustCompile(`table\.concat\(`)
)

// TestWholeTableCallsAreBounded holds every unpack and table.concat of
// the scripts to the rules above.
func TestWholeTableCallsAreBounded(t *testing.T) {
	seen := map[string]bool{}
	for file, src := range Files() {
		inJoin := false
		for n, line := range strings.Split(src, "\n") {
			code := line
			if i := strings.Index(code, "--"); i >= 0 {
				code = code[:i]
			}
			if file == "lib.lua" && strings.HasPrefix(line, "local function join(") {
				inJoin = true
			} else if inJoin && line == "end" {
				inJoin = false
			}
			for _, m := range unpackCall.FindAllStringIndex(code, -1) {
				args, ok := callArgs(code[m[1]:])
				if !ok {
					t.Errorf("%s:%d: an unpack this test cannot read (write it on one line): %s", file, n+1, line)
					continue
				}
				if len(args) >= 3 {
					continue // a range
				}
				key := file + " unpack(" + strings.Join(args, ", ") + ")"
				if _, ok := boundedUnpacks[key]; !ok {
					t.Errorf("%s:%d: %s takes a whole table: name its range, a thousand values at a time, or list it in boundedUnpacks with what bounds it", file, n+1, key)
				}
				seen[key] = true
			}
			for _, m := range concatCall.FindAllStringIndex(code, -1) {
				if inJoin {
					continue
				}
				args, ok := callArgs(code[m[1]:])
				key := file + " table.concat(" + strings.Join(args, ", ") + ")"
				if _, listed := boundedConcats[key]; !ok || !listed {
					t.Errorf("%s:%d: %s: use join (lib.lua), or list it in boundedConcats with what bounds its parts", file, n+1, key)
				}
				seen[key] = true
			}
		}
	}
	for key := range boundedUnpacks {
		if !seen[key] {
			t.Errorf("boundedUnpacks lists %s, which no script has", key)
		}
	}
	for key := range boundedConcats {
		if !seen[key] {
			t.Errorf("boundedConcats lists %s, which no script has", key)
		}
	}
}

// callArgs splits the arguments of a call whose text after its opening
// parenthesis is rest, at the commas of its own level; ok is false when
// the call does not close on the line.
func callArgs(rest string) (args []string, ok bool) {
	depth, start := 0, 0
	for i, c := range rest {
		switch c {
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			if depth == 0 {
				if a := strings.TrimSpace(rest[start:i]); a != "" || len(args) > 0 {
					args = append(args, a)
				}
				return args, true
			}
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(rest[start:i]))
				start = i + 1
			}
		}
	}
	return nil, false
}

// TestWholeTableCallSites: the test above reads calls as they are written.
func TestWholeTableCallSites(t *testing.T) {
	for _, c := range []struct {
		rest string
		want []string
	}{
		{"t)", []string{"t"}},
		{"t, i, math.min(i + 999, #t)))", []string{"t", "i", "math.min(i + 999, #t)"}},
		{"partition_keys(KEYS, PFX), 1, 8)", []string{"partition_keys(KEYS, PFX)", "1", "8"}},
		{"{ a, b }, ' ')", []string{"{ a, b }", "' '"}},
	} {
		got, ok := callArgs(c.rest)
		if !ok || strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("callArgs(%q) = %q %v, want %q", c.rest, got, ok, c.want)
		}
	}
	if _, ok := callArgs("t, i,"); ok {
		t.Error("a call that does not close on its line was read")
	}
	if unpackCall.MatchString("MSGPACK.unpack(s)") || unpackCall.MatchString("x = unpack_args(s)") || !unpackCall.MatchString("f(unpack(t))") {
		t.Error("unpackCall matches other functions, or misses a call")
	}
}
