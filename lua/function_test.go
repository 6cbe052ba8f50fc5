package lua

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestAllListsEveryScript: All names every script file but the prelude's,
// so tests that load or inspect every script miss none.
func TestAllListsEveryScript(t *testing.T) {
	names, err := fs.Glob(files, "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	all := All()
	for _, n := range names {
		n = strings.TrimSuffix(n, ".lua")
		if strings.HasPrefix(n, "lib") {
			continue
		}
		if all[n] == nil {
			t.Errorf("lua.All lacks %s", n)
		}
	}
}

// TestPerCall: the definitions a function library must evaluate on every
// call are those that read the call, use a global, start as an empty
// table or are assigned later; constants and functions are made once,
// and so are values read from a constant's fields (a field's name is
// not a global).
func TestPerCall(t *testing.T) {
	lib := `local A = KEYS[1]
local B = 'x' .. A
local C = { one = 1, two = 'two' }
local D = 7 * 24 -- hours
local E = tonumber('5')
local G = {}
local H = false
local function f() return C.one end
local I = f()
local J = math.huge
local function set() H = true end
local K = 1e15
local L = { C.one, C.two }
local M = { B.len }
local N = 'a'..C.two
`
	units, _ := parseUnits(lib)
	per := perCall(units, lib)
	var got []string
	for k, u := range units {
		if per[k] {
			got = append(got, u.names...)
		}
	}
	want := []string{"A", "B", "E", "G", "H", "I", "J", "M"}
	if !slices.Equal(got, want) {
		t.Errorf("per call: %v, want %v", got, want)
	}
}

// TestPerPartition: of the per-call definitions, those built from the
// partition's prefix (PFX) and its declared keys alone, directly or
// through others of them, are computed per partition; anything that
// reads more of the call, calls a function, or is assigned later is not.
func TestPerPartition(t *testing.T) {
	lib := `local PFX, CHAN = ARGV[2], ARGV[3]
local K_A, K_B = unpack(partition_keys(KEYS, PFX), 1, 2)
local P = PFX .. 'p'
local Q = P .. ':' .. K_B
local R = PFX .. CHAN
local S = PFX .. 'x' .. ARGV[5]
local T = string.upper(PFX)
local U = PFX .. 'u'
local W = PFX .. 'w'
local function set() U = 'v' end
local X = W .. tostring(1)
local Y = KEYS[1] .. 'y'
`
	units, _ := parseUnits(lib)
	per := perCall(units, lib)
	part := perPartition(units, per, lib)
	var got []string
	for k, u := range units {
		if part[k] {
			if !per[k] {
				t.Errorf("%v: per partition but not per call", u.names)
			}
			got = append(got, u.names...)
		}
	}
	want := []string{"K_A", "K_B", "P", "Q", "W"}
	if !slices.Equal(got, want) {
		t.Errorf("per partition: %v, want %v", got, want)
	}
}

// TestLibraryShape: a library declares its per-call variables where the
// prelude defined them (making its empty tables there), assigns them in
// begin_call in their order (an empty table only when the call before
// filled it), and
// registers the script's body as its one function, named after the
// library's text.
func TestLibraryShape(t *testing.T) {
	sc := Ack
	lib := sc.Library()
	if !strings.HasPrefix(lib, "#!lua name=s"+sc.Function()+"\n") {
		t.Fatalf("library header: %q", lib[:60])
	}
	if !strings.Contains(lib, "redis.register_function('"+sc.Function()+"', function(keys, args)\nbegin_call(keys, args)\n") {
		t.Error("the body is not registered as the library's function")
	}
	if strings.Contains(lib, "local NOW = ") || !strings.Contains(lib, "\nlocal NOW\n") || !strings.Contains(lib, "  NOW = now_ms()") {
		t.Error("NOW is not declared at load and assigned per call")
	}
	// the partition's names: computed when the call's partition is not
	// the one before's, right after PFX, before the rest of begin_call
	names := strings.Index(lib, "\n  if NAMES_FOR ~= PFX then name_partition() end\n")
	if names < 0 || !strings.Contains(lib, "\nlocal NAMES_FOR\nlocal function name_partition()\n  K_SCHED, K_RUN, K_DONE, K_DEAD, K_QUAR, K_CANC, K_STATS, K_IDLE =") ||
		!strings.Contains(lib, "\n  MODEL_KEY = PFX .. 'dm'\n") || !strings.Contains(lib, "\n  NAMES_FOR = PFX\nend\nlocal function begin_call(") {
		t.Error("the partition's key names are not computed per partition")
	}
	if pfx := strings.Index(lib, "  PFX, CHAN, PART = ARGV[2], ARGV[3], ARGV[4]\n"); pfx < 0 || pfx > names ||
		names > strings.Index(lib, "  NOW = now_ms()") {
		t.Error("per-call assignments out of the prelude's order")
	}
	if !strings.Contains(lib, "\nlocal DELTA, ZADDS, ZREMS = {}, {}, {}") || !strings.Contains(lib, "  if next(ZADDS) ~= nil then ZADDS = {} end\n") {
		t.Error("the per-call empty tables are not made at load and replaced only when a call left them filled")
	}
	if !strings.Contains(lib, "local F = {") {
		t.Error("the field table is not built once, at load")
	}
	// partition_keys's cache outlives the call: replaced per call, it would
	// make a single server's every call name its keys again
	if !strings.Contains(lib, "\nlocal NAMED = { pfx = false, keys = false }\n") || strings.Contains(lib, "  NAMED =") {
		t.Error("NAMED is not made once, at load, and kept across calls")
	}
}

// TestUpvalueHeadroom: Redis's Lua (5.1) allows a function 60 upvalues,
// and a library function's upvalues are the library's top-level locals
// it names, in its own text or in the functions nested in it. gopher-lua
// (miniredis) has no such limit, so a script over it would fail at
// FUNCTION LOAD on a real Redis alone. This counts them for every
// function at the library's top level (the prelude's, begin_call,
// name_partition) and every script's function, as luac5.1 -l -l does
// (claim's function names 51), and keeps 3 spare.
func TestUpvalueHeadroom(t *testing.T) {
	const limit = 60 - 3
	top := regexp.MustCompile(`(?m)^local (?:function )?([A-Za-z_][\w, ]*)`)
	for name, sc := range All() {
		code := luaCode(sc.Library())
		fn := strings.Index(code, "redis.register_function(")
		if fn < 0 {
			t.Fatalf("%s: no registered function", name)
		}
		locals := map[string]bool{} // the library's top level, before its function
		for _, m := range top.FindAllStringSubmatch(code[:fn], -1) {
			for n := range strings.SplitSeq(m[1], ",") {
				if f := strings.Fields(n); len(f) > 0 {
					locals[f[0]] = true
				}
			}
		}
		// named counts the top-level locals part names, but for those in
		// shadow (a function's parameters)
		named := func(part string, shadow map[string]bool) int {
			seen := map[string]bool{}
			for _, w := range word.FindAllString(part, -1) {
				if locals[w] && !shadow[w] {
					seen[w] = true
				}
			}
			return len(seen)
		}
		check := func(what, part string, shadow map[string]bool) {
			if n := named(part, shadow); n > limit {
				t.Errorf("%s: %s names %d of the library's top-level locals, over %d", name, what, n, limit)
			}
		}
		check("its function", code[fn:], nil)
		for _, m := range topFunc.FindAllStringSubmatchIndex(code[:fn], -1) {
			// its parameters, then its body, up to the next unit (a line
			// at column 0 that starts one: the body is indented)
			rest := code[m[1]:fn]
			params, body, _ := strings.Cut(rest, ")")
			if next := nextUnit.FindStringIndex(body); next != nil {
				body = body[:next[0]]
			}
			shadow := map[string]bool{}
			for _, p := range word.FindAllString(params, -1) {
				shadow[p] = true
			}
			check(code[m[2]:m[3]], body, shadow)
		}
	}
}

// topFunc is a function defined at a library's top level; nextUnit the
// line that starts the next definition, or the script's function.
var (
	topFunc  = regexp.MustCompile(`(?m)^local function (\w+)\(`)
	nextUnit = regexp.MustCompile(`(?m)^(?:local |redis\.register_function)`)
)

// luaCode is Lua source without its comments and with every string
// literal emptied, so that only code names names.
func luaCode(src string) string {
	var b strings.Builder
	longEnd := func(i int) (string, int) { // at '[': the closing of a long bracket, and its opening's length
		j := i + 1
		for j < len(src) && src[j] == '=' {
			j++
		}
		if j < len(src) && src[j] == '[' {
			return "]" + strings.Repeat("=", j-i-1) + "]", j - i + 1
		}
		return "", 0
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case strings.HasPrefix(src[i:], "--"):
			if src[i+2:] != "" && src[i+2] == '[' {
				if closing, n := longEnd(i + 2); n > 0 {
					end := strings.Index(src[i+2+n:], closing)
					if end < 0 {
						return b.String()
					}
					i += 2 + n + end + len(closing)
					continue
				}
			}
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			b.WriteString("''")
			i = j + 1
		case c == '[':
			if closing, n := longEnd(i); n > 0 {
				end := strings.Index(src[i+n:], closing)
				if end < 0 {
					return b.String()
				}
				b.WriteString("''")
				i += n + end + len(closing)
				continue
			}
			b.WriteByte(c)
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}
