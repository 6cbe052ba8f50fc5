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
//   - its line before the call, or the line before, compares the
//     subject's length (#subject > n, and the like);
//   - its subject is a window cut from the start, string.sub(v, 1, n);
//   - it is one of boundedElsewhere, which says what bounds it.
//
// A new site fails the test until it is bounded or listed, and so does a
// call it cannot read (TestPatternSites). The values
// that reach the sites bounded here are tested at megabytes on miniredis
// (internal/store TestValuesOfMegabytes).
func TestPatternSubjectsAreBounded(t *testing.T) {
	seen := map[string]bool{}
	files := Files()
	files["gopher.go"] = gopherShim
	for file, src := range files {
		sites, unread := patternSites(src)
		for _, line := range unread {
			t.Errorf("%s: a pattern call this test cannot read (write it on one line, its pattern a quoted literal, its subject a name): %s", file, line)
		}
		for _, s := range sites {
			if s.plain || !repeats(s.pattern) {
				continue
			}
			key := file + " " + s.subject + " " + s.pattern
			seen[key] = true
			if boundedElsewhere[key] == "" && !s.bounded() {
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
// up to the call, the line before, and whether it is a plain find.
type site struct {
	subject, pattern, line, before string
	plain                          bool
}

// bounded reports whether the site's subject is a window from its start
// (string.sub(v, 1, n), n no negative number), or its length is compared
// before the call, on its line or the line before.
func (s site) bounded() bool {
	if rest, ok := strings.CutPrefix(s.subject, "string.sub("); ok {
		args := splitArgs(rest)
		return len(args) == 3 && args[1] == "1" && !strings.HasPrefix(args[2], "-")
	}
	for _, op := range []string{" > ", " >= ", " < ", " <= "} {
		if strings.Contains(s.line, "#"+s.subject+op) || strings.Contains(s.before, "#"+s.subject+op) {
			return true
		}
	}
	return false
}

var (
	callToken  = regexp.MustCompile(`(?:string\.|:)(?:match|find|gmatch|gsub)\b`)
	callFunc   = regexp.MustCompile(`^string\.(?:match|find|gmatch|gsub)\(`)
	callMethod = regexp.MustCompile(`([\w.\[\]]+)$`)
)

// patternSites are the pattern calls of src outside comments, and the
// lines of those it cannot read: a call split over lines, a pattern that
// is not a quoted literal, a method called on what is not a name, the
// function named without a call (an alias).
func patternSites(src string) (out []site, unread []string) {
	code := ""
	for _, line := range strings.Split(src, "\n") {
		before := code
		code = stripComment(line)
		for _, m := range callToken.FindAllStringIndex(code, -1) {
			var args []string
			var subject string
			at := m[0]
			if code[m[0]] == ':' {
				r := callMethod.FindStringSubmatchIndex(code[:m[0]])
				if r == nil || !strings.HasPrefix(code[m[1]:], "(") {
					unread = append(unread, strings.TrimSpace(line))
					continue
				}
				subject, at = code[r[2]:r[3]], r[2]
				args = append([]string{subject}, splitArgs(code[m[1]+1:])...)
			} else if callFunc.MatchString(code[m[0]:]) {
				args = splitArgs(code[m[1]+1:])
			}
			plain := len(args) >= 4 && args[3] == "true" // its pattern may be any string
			p, ok := "", len(args) >= 2
			if ok && !plain {
				p, ok = literal(args[1])
			}
			if !ok {
				unread = append(unread, strings.TrimSpace(line))
				continue
			}
			out = append(out, site{subject: args[0], pattern: p, line: code[:at], before: before, plain: plain})
		}
	}
	return out, unread
}

// stripComment is line without a comment ('--' outside a quoted string).
func stripComment(line string) string {
	cut := len(line)
	outsideQuotes(line, func(i int) bool {
		if line[i] == '-' && i+1 < len(line) && line[i+1] == '-' {
			cut = i
			return false
		}
		return true
	})
	return line[:cut]
}

// splitArgs reads a call's arguments from just after its '(' to the ')'
// that closes it, split at its top-level commas; nil when it is not
// closed there.
func splitArgs(s string) []string {
	var args []string
	depth, start, closed := 0, 0, false
	outsideQuotes(s, func(i int) bool {
		switch s[i] {
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			if depth == 0 {
				args, closed = append(args, strings.TrimSpace(s[start:i])), true
				return false
			}
			depth--
		case ',':
			if depth == 0 {
				args, start = append(args, strings.TrimSpace(s[start:i])), i+1
			}
		}
		return true
	})
	if !closed {
		return nil
	}
	return args
}

// outsideQuotes calls f with the index of each byte of s that is not in a
// quoted string (nor one of its quotes), until f returns false.
func outsideQuotes(s string, f func(i int) bool) {
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		default:
			if !f(i) {
				return
			}
		}
	}
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

// TestPatternSites: the scanner reads the forms the scripts use and
// reports, rather than skips, those it cannot read; a length is a bound
// only when compared before the call, a window only from the start.
func TestPatternSites(t *testing.T) {
	for _, c := range []struct {
		src  string
		want string // "unread", "unbounded", "bounded" or "plain"
	}{
		{"local x = string.match(v, P)", "unread"},
		{"local x = string.match(v,\n  '^%d+$')", "unread"},
		{"for w in (o[5] or ''):gmatch('%S+') do end", "unread"},
		{"local x = tostring(v):match('^%d+')", "unread"},
		{"local x = string.match(v, [[^%d+]])", "unread"},
		{"local m = string.match", "unread"},
		{"local x = string.match(v, '^x+--')", "unbounded"},
		{"local x = #v == 0 or string.match(v, '^%d+$')", "unbounded"},
		{"local x = string.match(string.sub(v, 1, -1), '^%d+$')", "unbounded"},
		{"local x = string.match(v, '^%d+$') or #v > 19", "unbounded"},
		{"local x = v:match('^%S+') -- #v > 3", "unbounded"},
		{"local x = #v > 19 or not string.match(v, '^%d+$')", "bounded"},
		{"if #v > 9 then return end\nlocal x = v:match('^%d+$')", "bounded"},
		{"local x = string.match(string.sub(v, 1, 57), '^(%d+):')", "bounded"},
		{"local x = string.find(v, p, 1, true)", "plain"},
	} {
		sites, unread := patternSites(c.src)
		got := "none"
		switch {
		case len(unread) > 0:
			got = "unread"
		case len(sites) == 1 && sites[0].plain:
			got = "plain"
		case len(sites) == 1 && sites[0].bounded():
			got = "bounded"
		case len(sites) == 1:
			got = "unbounded"
		}
		if got != c.want {
			t.Errorf("%q: %s, want %s", c.src, got, c.want)
		}
	}
}
