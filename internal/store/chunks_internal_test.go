package store

import (
	"errors"
	"testing"
)

// TestChunksJoin: chunks join in order whichever order they come in; none
// is no value; a gap, chunk 0 included, is ErrMalformed.
func TestChunksJoin(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  map[int]string
		want string // "!" for ErrMalformed
	}{
		{"none", nil, ""},
		{"one", map[int]string{0: "abc"}, "abc"},
		{"one, empty", map[int]string{0: ""}, ""},
		{"three", map[int]string{2: "c", 0: "a", 1: "b"}, "abc"},
		{"a gap", map[int]string{0: "a", 2: "c"}, "!"},
		{"no chunk 0", map[int]string{1: "b"}, "!"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c chunks
			for n, v := range tc.add {
				c.add(n, v)
			}
			got, err := c.join("j", "payload")
			switch {
			case tc.want == "!":
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("join = %q, %v; want ErrMalformed", got, err)
				}
			case err != nil || string(got) != tc.want:
				t.Fatalf("join = %q, %v; want %q", got, err, tc.want)
			case tc.add == nil && got != nil:
				t.Fatalf("join of nothing = %q, want nil", got)
			case tc.add != nil && got == nil:
				t.Fatalf("join of an empty chunk = nil, want an empty value")
			}
		})
	}
}
