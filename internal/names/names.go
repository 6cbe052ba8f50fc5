// Package names validates the names users give things (job kinds, queues,
// steps): cheap enough for every enqueue, one rule for all.
package names

// Valid reports whether s is 1 to max bytes long, starts with an ASCII
// letter or digit, and has only letters, digits and bytes of extra after.
func Valid(s string, max int, extra string) bool {
	if len(s) == 0 || len(s) > max || !alnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !alnum(c) && !in(c, extra) {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func in(c byte, set string) bool {
	for i := 0; i < len(set); i++ {
		if set[i] == c {
			return true
		}
	}
	return false
}
