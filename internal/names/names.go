// Package names validates the names users give things (job kinds, queues,
// steps): cheap enough for every enqueue, one rule for all.
package names

import (
	"strconv"
	"unicode/utf8"
)

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

// quoteMax is how much of a name Quote shows.
const quoteMax = 64

// Quote is s as an error message shows a name it refuses: quoted (%q),
// and when longer than quoteMax bytes cut there, at a character's start,
// with its length. A refused name can be anything, a megabyte included,
// and an error is logged and sent on.
func Quote(s string) string {
	if len(s) <= quoteMax {
		return strconv.Quote(s)
	}
	cut := quoteMax
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}
