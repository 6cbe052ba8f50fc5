package store

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/lua"
)

// TestRelayKeepAgrees: the scripts keep a relayed follow-up's and a child
// notification's marker (lib.lua RELAY_KEEP) as long as the relay keeps
// an effect's (relayMarkTTL): a relay repeated within that time finds
// every kind of marker.
func TestRelayKeepAgrees(t *testing.T) {
	m := regexp.MustCompile(`(?m)^local RELAY_KEEP = (\d+)$`).FindStringSubmatch(lua.Prelude())
	if m == nil {
		t.Fatal("lib.lua defines no RELAY_KEEP")
	}
	if got, _ := strconv.ParseInt(m[1], 10, 64); got != relayMarkTTL.Milliseconds() {
		t.Fatalf("RELAY_KEEP %d ms, relayMarkTTL %d ms", got, relayMarkTTL.Milliseconds())
	}
}
