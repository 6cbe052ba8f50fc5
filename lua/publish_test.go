package lua

import (
	"regexp"
	"testing"
)

// TestPublishNeverRaises: every PUBLISH a script makes is a redis.pcall. A
// channel the caller's ACL user may not use makes Redis refuse it, and a
// script that raised there would fail after its writes (Redis rolls
// nothing back), and its re-send apply them again: a watched job's
// completion effects ran twice that way. A lost message costs the
// listener its poll, never a write. This covers the whole class, every
// script and every channel, where a test can only try one.
func TestPublishNeverRaises(t *testing.T) {
	raises := regexp.MustCompile(`redis\.call\(\s*'PUBLISH'`)
	for name, src := range Files() {
		for _, loc := range raises.FindAllStringIndex(stripComments(src), -1) {
			t.Errorf("%s: a PUBLISH made with redis.call (at byte %d): a refused channel would raise after the writes; use redis.pcall", name, loc[0])
		}
	}
}
