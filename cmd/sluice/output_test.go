package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDecodedDeepPayload: a payload of msgpack nested past msgview's
// depth limit (a 1 MiB run of one-element arrays) is named as such, not
// as "not msgpack", and decoding it neither recurses nor crashes.
func TestDecodedDeepPayload(t *testing.T) {
	deep := append(bytes.Repeat([]byte{0x91}, 1<<20), 0x01)
	got, ok := decoded(deep).(string)
	if !ok || !strings.Contains(got, "nested more than") {
		t.Errorf("decoded: %v, want a note that it nests too deep", got)
	}
	if v := decoded([]byte{0x91, 0x01}); v == nil {
		t.Error("a shallow array did not decode")
	}
}
