package lua

import (
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
	for _, u := range parseUnits(body("lib")) {
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
		if name == "lib" || name == e.Name() {
			continue
		}
		src := Source(name)
		defined := map[string]bool{}
		for _, u := range parseUnits(src) {
			for _, n := range u.names {
				defined[n] = true
			}
		}
		for _, l := range strings.Split(src, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "--") {
				continue
			}
			for _, w := range regexp.MustCompile(`[A-Za-z_]\w*`).FindAllString(l, -1) {
				if names[w] && !defined[w] {
					t.Errorf("%s.lua uses %s, which its prelude leaves out", name, w)
				}
			}
		}
	}
	full := strings.Count(body("lib"), "\nlocal function ")
	for name, most := range map[string]int{"renew": full / 10, "step": full / 4, "enqueue": full / 2} {
		if n := strings.Count(Source(name), "\nlocal function "); n > most {
			t.Errorf("%s.lua defines %d of the prelude's %d functions, want at most %d", name, n, full, most)
		}
	}
}
