package names

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	cases := []struct {
		s    string
		max  int
		want bool
	}{
		{"a", 3, true}, {"a-b", 3, true}, {"abcd", 3, false}, {"", 3, false},
		{"-a", 3, false}, {"a b", 3, false}, {"a:b", 3, false}, {"ä", 3, false}, {"A_9", 3, true},
	}
	for _, c := range cases {
		if got := Valid(c.s, c.max, "-_"); got != c.want {
			t.Errorf("Valid(%q, %d) = %v, want %v", c.s, c.max, got, c.want)
		}
	}
}

// TestQuote: a short name is quoted whole; a long one is cut at 64 bytes,
// never inside a character, and says how long it was.
func TestQuote(t *testing.T) {
	long := strings.Repeat("a", 63) + "é" + strings.Repeat("b", 1<<20)
	cases := []struct{ s, want string }{
		{"", `""`},
		{"a b", `"a b"`},
		{strings.Repeat("x", 64), `"` + strings.Repeat("x", 64) + `"`},
		{strings.Repeat("x", 65), `"` + strings.Repeat("x", 64) + `"... (65 bytes)`},
		{long, `"` + strings.Repeat("a", 63) + `"... (1048641 bytes)`},
	}
	for _, c := range cases {
		if got := Quote(c.s); got != c.want {
			t.Errorf("Quote(%.80q) = %.200s, want %s", c.s, got, c.want)
		}
	}
}
