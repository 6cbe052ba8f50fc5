package lua

import (
	"maps"
	"regexp"
	"strings"
	"testing"
)

// TestPreludeForKeepsWhatIsUsed: a script gets the definitions it names,
// those they name in turn, and nothing else, in lib.lua's order; a name
// only in a whole-line comment is not a use.
func TestPreludeForKeepsWhatIsUsed(t *testing.T) {
	lib := `-- header

local A = 1
-- b doubles A
local function b() return A * 2 end
local C, D = {}, {}
local function e()
  -- b is not called here
  return D
end
local function f() return e() end
`
	got := preludeFor(lib, "return f()\n")
	want := "-- header\n\nlocal C, D = {}, {}\nlocal function e()\n  -- b is not called here\n  return D\nend\nlocal function f() return e() end\n\n"
	if got != want {
		t.Errorf("preludeFor:\n%s\nwant:\n%s", got, want)
	}
	if got := preludeFor(lib, "return b()"); !strings.Contains(got, "local A = 1\n-- b doubles A\nlocal function b()") {
		t.Errorf("b without A and its comment:\n%s", got)
	}
}

// TestEveryScriptDefinesWhatItUses: no script refers to a prelude name
// that its text leaves out (Redis would fail the call with "attempt to
// access nonexistent global variable" on that path only), and the hot
// scripts carry much less than the whole prelude.
func TestEveryScriptDefinesWhatItUses(t *testing.T) {
	names := map[string]bool{}
	units, _ := parseUnits(lib())
	for _, u := range units {
		for _, n := range u.names {
			names[n] = true
		}
	}
	entries, err := files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".lua")
		if strings.HasPrefix(name, "lib") || name == e.Name() {
			continue
		}
		src := Source(name)
		_, defined := parseUnits(src)
		for _, l := range strings.Split(src, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "--") {
				continue
			}
			for _, w := range regexp.MustCompile(`[A-Za-z_]\w*`).FindAllString(l, -1) {
				if _, ok := defined[w]; names[w] && !ok {
					t.Errorf("%s.lua uses %s, which its prelude leaves out", name, w)
				}
			}
		}
	}
	full := strings.Count(lib(), "\nlocal function ")
	// enqueue's debounce takes a job off its wait list and passes its
	// concurrency key's turn on (lib_limits.lua unlist, cc_release), and
	// it leases plain jobs to an idle worker's offer (lib_offer.lua)
	for name, most := range map[string]int{"renew": full / 10, "step": full / 3, "enqueue": full * 3 / 5} {
		if n := strings.Count(Source(name), "\nlocal function "); n > most {
			t.Errorf("%s.lua defines %d of the prelude's %d functions, want at most %d", name, n, full, most)
		}
	}
}

// TestLibShape: lib.lua keeps the shape preludeFor relies on. Every line
// at column 0 is a comment, a 'local' statement that defines names (a
// function, or names with '='; a bare forward declaration would never be
// included), or the end of a block; code in any other top-level statement
// would be glued to the definition above it and dropped with it.
func TestLibShape(t *testing.T) {
	for i, l := range strings.Split(lib(), "\n") {
		switch {
		case l == "", strings.HasPrefix(l, " "), strings.HasPrefix(l, "\t"), l == "end", l == "}", l == ")":
		case strings.HasPrefix(l, "--[["):
			t.Errorf("lib.lua:%d: a block comment: the prelude parser reads comments line by line", i+1)
		case strings.HasPrefix(l, "--"):
		case localFunc.MatchString(l), localVars.MatchString(l):
		default:
			t.Errorf("lib.lua:%d: %q is not a definition; top-level code outside 'local' statements would be dropped", i+1, l)
		}
	}
}

// TestLibDefinesBeforeUse: every definition of the prelude refers only to
// definitions above it in the joined files (libParts): a Lua local is not
// visible above its definition, where the name would read as an undefined
// global on that path only.
func TestLibDefinesBeforeUse(t *testing.T) {
	units, defined := parseUnits(lib())
	for k, u := range units {
		var code strings.Builder // u without its trailing comments, which may name anything
		for l := range strings.SplitSeq(u.text, "\n") {
			code.WriteString(strings.SplitN(l, " -- ", 2)[0] + "\n")
		}
		for _, r := range mentions(code.String(), defined) {
			if r > k {
				t.Errorf("%v refers to %v, defined below it", u.names, units[r].names)
			}
		}
	}
}

// TestStateCodesInverse: lib.lua's SNAME, spelled out so that it is built
// once per library load, is SCODE inverted.
func TestStateCodesInverse(t *testing.T) {
	src := Prelude()
	table := func(name string) string {
		i := strings.Index(src, "local "+name+" = {")
		if i < 0 {
			t.Fatalf("lib.lua has no table %s", name)
		}
		j := strings.Index(src[i:], "\n}")
		return src[i : i+j]
	}
	codes := map[string]string{} // name -> code
	for _, m := range regexp.MustCompile(`(\w+) = '(\d)'`).FindAllStringSubmatch(table("SCODE"), -1) {
		codes[m[1]] = m[2]
	}
	names := map[string]string{} // name -> code
	for _, m := range regexp.MustCompile(`\['(\d)'\] = '(\w+)'`).FindAllStringSubmatch(table("SNAME"), -1) {
		names[m[2]] = m[1]
	}
	if len(codes) != 8 || !maps.Equal(codes, names) {
		t.Fatalf("SCODE %v, SNAME inverted %v", codes, names)
	}
	lib := Enqueue.Library()
	begin := lib[strings.Index(lib, "local function begin_call"):]
	if strings.Contains(begin[:strings.Index(begin, "\nend\n")], "SNAME") {
		t.Error("SNAME is assigned per call")
	}
}
