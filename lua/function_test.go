package lua

import (
	"io/fs"
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
	names := strings.Index(lib, "\n  if NAMES_FOR ~= PFX then\n    NAMES_FOR = PFX\n    K_SCHED, K_RUN, K_DONE, K_DEAD, K_QUAR, K_CANC, K_STATS, K_IDLE =")
	if names < 0 || !strings.Contains(lib, "\nlocal NAMES_FOR\n") || !strings.Contains(lib, "\n    MODEL_KEY = PFX .. 'dm'\n") {
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
