package lua

import (
	"strings"
	"testing"

	glua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// registerHeadroom is how many more top-level locals every script's EVAL
// text must still compile with under gopher-lua, the Lua of miniredis,
// which caps a function's registers, its locals and the temporaries of
// its expressions, at 200. The prelude's definitions are locals of the
// script's chunk, so a definition added to it, or a script that grows,
// can leave the hot scripts short.
const registerHeadroom = 8

// TestScriptsHaveRegisterHeadroom: each script compiles with
// registerHeadroom more locals before it.
func TestScriptsHaveRegisterHeadroom(t *testing.T) {
	names := make([]string, registerHeadroom)
	for i := range names {
		names[i] = "headroom_" + string(rune('a'+i))
	}
	pad := "local " + strings.Join(names, ", ") + "\n"
	for name, sc := range All() {
		chunk, err := parse.Parse(strings.NewReader(pad+sc.m().src), name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, err := glua.Compile(chunk, name); err != nil {
			t.Errorf("%s leaves fewer than %d registers spare: %v", name, registerHeadroom, err)
		}
	}
}
