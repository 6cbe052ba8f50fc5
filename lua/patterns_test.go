package lua

import (
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Under miniredis, Lua is gopher-lua, whose pattern matcher recurses once
// for every character a repeated item (x*, x+, x-) takes: a value of about
// 2.5 MB overflows the Go stack at 1 GB, and the Go runtime ends the whole
// process, not the script. A real Redis's matcher is not affected, so
// only the embedded demo and tests would fall, but a value of that size
// can come from corrupt data or from a caller, and every repeating
// pattern must be kept from meeting one.
//
// TestPatternSubjectsAreBounded finds every call of string.match, find,
// gmatch and gsub (function or method form) in the embedded scripts whose
// pattern repeats an item, and holds each to one of:
//   - its line before the call, or the line before, tests the subject's
//     length (#subject);
//   - its subject is a window cut from the start, string.sub(v, 1, n);
//   - it is one of boundedElsewhere, which says what bounds it.
//
// A new site fails the test until it is bounded or listed. The values
// that reach the sites bounded here are tested at megabytes on miniredis
// (internal/store TestValuesOfMegabytes).
func TestPatternSubjectsAreBounded(t *testing.T) {
	seen := map[string]bool{}
	for file, src := range Files() {
		for _, s := range patternSites(src) {
			if !repeats(s.pattern) {
				continue
			}
			key := file + " " + s.subject + " " + s.pattern
			seen[key] = true
			switch {
			case boundedElsewhere[key] != "":
			case strings.HasPrefix(s.subject, "string.sub(") && strings.Contains(s.subject, ", 1, "):
			case strings.Contains(s.line, "#"+s.subject+" "), strings.Contains(s.before, "#"+s.subject+" "):
			default:
				t.Errorf("%s: %q meets %s unbounded: test #%s on its line, cut a window with string.sub, or list what bounds it in boundedElsewhere", file, s.pattern, s.subject, s.subject)
			}
		}
	}
	var stale []string
	for key := range boundedElsewhere {
		if !seen[key] {
			stale = append(stale, key)
		}
	}
	sort.Strings(stale)
	for _, key := range stale {
		t.Errorf("boundedElsewhere lists %q, which no script has", key)
	}
}

// boundedElsewhere are repeating patterns whose subjects are bounded
// before they reach Lua: "file subject pattern" -> what bounds them.
var boundedElsewhere = map[string]string{
	"lib_effects.lua st[1] or '' ^(%d+)%-(%d+)$":                           "an entry ID Redis gave XADD's reply",
	"lib_offer.lua lead ^(%d+) (%d+) (%d+) (%d+) ([^ ]*) ([^ ]*) (%d+) ()": "the flag's first OFFER_HEAD bytes, cut by string.sub",
	"lib_replay.lua CALL_ID ^[^~]*~(%d+)$":                                 "a call ID store.newCallID writes (a local ID and a number)",
	"lib_waits.lua spec [^\\n]+":                                           "the suspend spec store.Ack writes from waits whose names step.validName bounds",
	"lib_waits.lua line ^t ([%w_./-]+) ([da]) (%d+)$":                      "a line of that spec",
	"lib_waits.lua line ^s ([%w_./-]+)$":                                   "a line of that spec",
	"list.lua pos ^(%d+)%.(%d+)$":                                          "a cursor admin.parseCursor takes (15 digits a number)",
	"list.lua cursor ^(%d+)%.(%d+)$":                                       "a cursor admin.parseCursor takes (15 digits a number)",
}

// site is one pattern call: its subject and pattern as written, its line
// up to the call, and the line before.
type site struct {
	subject, pattern, line, before string
}

var (
	callFunc   = regexp.MustCompile(`string\.(?:match|find|gmatch|gsub)\(`)
	callMethod = regexp.MustCompile(`([\w.\[\]]+):(?:match|find|gmatch|gsub)\(`)
)

// patternSites are the pattern calls of src whose pattern is a literal,
// outside comments; a find with plain set (its fourth argument true)
// matches no pattern and is left out.
func patternSites(src string) []site {
	var out []site
	code := ""
	for _, line := range strings.Split(src, "\n") {
		before := code
		code = line
		if i := strings.Index(code, "--"); i >= 0 {
			code = code[:i]
		}
		for _, m := range callFunc.FindAllStringIndex(code, -1) {
			args := splitArgs(code[m[1]:])
			if len(args) < 2 || (len(args) >= 4 && args[3] == "true") {
				continue
			}
			if p, ok := literal(args[1]); ok {
				out = append(out, site{subject: args[0], pattern: p, line: code[:m[0]], before: before})
			}
		}
		for _, m := range callMethod.FindAllStringSubmatchIndex(code, -1) {
			args := splitArgs(code[m[1]:])
			if len(args) < 1 || (len(args) >= 3 && args[2] == "true") {
				continue
			}
			if p, ok := literal(args[0]); ok {
				out = append(out, site{subject: code[m[2]:m[3]], pattern: p, line: code[:m[0]], before: before})
			}
		}
	}
	return out
}

// splitArgs reads a call's arguments from just after its '(' to the ')'
// that closes it, split at its top-level commas.
func splitArgs(s string) []string {
	var args []string
	depth, quote, start := 0, byte(0), 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '{' || c == '[':
			depth++
		case c == ')' || c == '}' || c == ']':
			if depth == 0 {
				return append(args, strings.TrimSpace(s[start:i]))
			}
			depth--
		case c == ',' && depth == 0:
			args = append(args, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return nil
}

// literal is the text of a quoted Lua string (escapes as written, '\n'
// as two characters), and whether arg is one.
func literal(arg string) (string, bool) {
	if len(arg) < 2 || (arg[0] != '\'' && arg[0] != '"') || arg[len(arg)-1] != arg[0] {
		return "", false
	}
	return arg[1 : len(arg)-1], true
}

// repeats reports whether Lua pattern p repeats an item: a single
// character, a %-class or a [set] followed by '*', '+' or '-'.
func repeats(p string) bool {
	for i := 0; i < len(p); {
		end := i + 1
		switch p[i] {
		case '%':
			end = i + 2
		case '[':
			end = i + 1
			if end < len(p) && p[end] == '^' {
				end++
			}
			if end < len(p) && p[end] == ']' {
				end++ // a ']' first in a set is itself
			}
			for end < len(p) && p[end] != ']' {
				if p[end] == '%' {
					end++
				}
				end++
			}
			end++
		case '(', ')', '^', '$':
			i++
			continue
		}
		if end < len(p) && strings.IndexByte("*+-", p[end]) >= 0 {
			return true
		}
		i = end
	}
	return false
}

// TestRepeats pins repeats on the forms the scripts use.
func TestRepeats(t *testing.T) {
	for p, want := range map[string]bool{
		"^%d+%-%d+$": true, "%S": false, "^[+-]": false, "[^%d.]": false, "'%d$'": false,
		"^[^\\n]*": true, "^[1-9]%d*$": true, "[%w_./-]+": true, "a-": true, "%-": false,
		"^([^:]*):": true, "[]]": false, "[%]]+": true, "^s ([%w_./-]+)$": true, "x?": false,
	} {
		if got := repeats(p); got != want {
			t.Errorf("repeats(%q) = %v, want %v", p, got, want)
		}
	}
}
