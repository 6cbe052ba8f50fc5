package names

import "testing"

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
