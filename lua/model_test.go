package lua

import (
	"strings"
	"testing"
)

// TestPartitionScriptsCheckTheModel: every script on a partition's layout
// checks the partition's data model (model_error) before anything else,
// so that none of this release writes to a partition a newer one changed;
// the scripts on other keys (the registry, workers, schedules, relayed
// effects) do not, as the data model does not cover them.
func TestPartitionScriptsCheckTheModel(t *testing.T) {
	const check = "do local refused = model_error() if refused then return refused end end\n"
	seen := 0
	for name, text := range Files() {
		if strings.HasPrefix(name, "lib") {
			continue
		}
		var code []string
		for l := range strings.SplitSeq(text, "\n") {
			if !strings.HasPrefix(l, "--") {
				code = append(code, l)
			}
		}
		first := strings.Join(code, "\n")
		partition := strings.Contains(text, "-- KEYS: the partition layout of lib.lua.")
		if checks := strings.HasPrefix(first, check); checks != partition {
			t.Errorf("%s: on the partition layout %v, starts with the model check %v", name, partition, checks)
		}
		if partition {
			seen++
		}
	}
	if seen < 20 {
		t.Fatalf("only %d partition scripts found", seen)
	}
}
