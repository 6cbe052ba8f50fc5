package checkpoint

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/lua"
)

// TestWaitFieldsAgreeWithLua: the prefixes and the signal field's layout
// are the ones lua/lib_waits.lua writes.
func TestWaitFieldsAgreeWithLua(t *testing.T) {
	src := lua.Source("signal")
	if !strings.Contains(src, "local TIMER_PREFIX, SIGNAL_PREFIX = '"+TimerPrefix+"', '"+SignalPrefix+"'") {
		t.Fatal("lua/lib_waits.lua names other prefixes")
	}
	if !strings.Contains(src, "string.format('%010d', seq) .. ':' .. name") {
		t.Fatal("lua/lib_waits.lua lays a signal's field out otherwise")
	}
	seq, name, ok := Signal("!s:0000000042:approve")
	if !ok || seq != 42 || name != "approve" {
		t.Fatalf("Signal: %d %q %v", seq, name, ok)
	}
	for _, bad := range []string{"!s:42:approve", "!s:0000000042", "!s:00000000x2:a", "!s:-000000042:a", "!s:+000000042:a", "approve", "!t:0000000042:a"} {
		if _, _, ok := Signal(bad); ok {
			t.Errorf("Signal(%q) ok", bad)
		}
	}
	if n, at, ok := Timer("!t:remind", []byte("1700000000000")); !ok || n != "remind" || !at.Equal(time.UnixMilli(1700000000000)) {
		t.Errorf("Timer: %q %v %v", n, at, ok)
	}
	for _, f := range []string{"!t:x", "!s:0000000001:x", "cursor:c"} {
		if IsStep(f) {
			t.Errorf("IsStep(%q)", f)
		}
	}
	if !IsStep("charge") {
		t.Error("IsStep(charge) false")
	}
}
