package lua

import (
	"strings"
	"testing"

	glua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// registerHeadroom is how many more locals every script's EVAL text must
// still compile with under gopher-lua, the Lua of miniredis, which caps a
// function's registers, its locals and the temporaries of its
// expressions, at 200: at the chunk's top level, where the prelude's
// definitions are locals, and at the top of the script's body, a function
// of its own (evalBody). A definition added to the prelude, or a script
// that grows, can leave a script short in either.
const registerHeadroom = 8

// TestScriptsHaveRegisterHeadroom: each script compiles with
// registerHeadroom more locals before its prelude, and as many more
// again at the top of its body.
func TestScriptsHaveRegisterHeadroom(t *testing.T) {
	names := make([]string, registerHeadroom)
	for i := range names {
		names[i] = "headroom_" + string(rune('a'+i))
	}
	pad := "local " + strings.Join(names, ", ") + "; "
	for name, sc := range All() {
		src := sc.m().src
		if strings.Count(src, evalOpen) != 1 {
			t.Errorf("%s: the EVAL text opens its body %d times, want once", name, strings.Count(src, evalOpen))
			continue
		}
		for where, text := range map[string]string{
			"the chunk": pad + src,
			"the body":  strings.Replace(src, evalOpen, evalOpen+pad, 1),
		} {
			chunk, err := parse.Parse(strings.NewReader(text), name)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if _, err := glua.Compile(chunk, name); err != nil {
				t.Errorf("%s: %s leaves fewer than %d registers spare: %v", name, where, registerHeadroom, err)
			}
		}
	}
}

// TestBodyRegistersAreItsOwn: a script body's locals do not count against
// the prelude's registers. A body of 150 locals compiles after the ack
// script's prelude, which would leave it fewer than 50 at the top level.
func TestBodyRegistersAreItsOwn(t *testing.T) {
	names := make([]string, 150)
	for i := range names {
		names[i] = "body_local_" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	body := "local " + strings.Join(names, ", ") + "\nreturn 1\n"
	p := parsed()
	src := gopherShim + p.text(p.need(Files()["ack.lua"]), "") + evalBody(body)
	chunk, err := parse.Parse(strings.NewReader(src), "ack-sized")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := glua.Compile(chunk, "ack-sized"); err != nil {
		t.Errorf("a body of 150 locals after ack's prelude: %v", err)
	}
	chunk, err = parse.Parse(strings.NewReader(gopherShim+p.text(p.need(Files()["ack.lua"]), "")+body), "flat")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := glua.Compile(chunk, "flat"); err == nil {
		t.Error("the same body at the chunk's top level compiled: the test no longer shows what evalBody is for")
	}
}
