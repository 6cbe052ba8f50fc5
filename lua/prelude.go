package lua

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Redis runs a script's whole text on every call, and most of lib.lua is
// function definitions: each costs a closure, about 0.4 µs, so the full
// prelude cost about 35 µs per call whatever the script needed. Each
// script therefore gets only the definitions it refers to, directly or
// through other definitions, in their original order (a Lua local can
// only refer to locals defined above it, so the order stays valid).

// unit is one top-level definition of lib.lua: a 'local' statement with
// the comment lines above it, up to the next one.
type unit struct {
	names []string // the locals it defines
	text  string
	refs  []int // the units whose names its code mentions
}

var (
	localFunc = regexp.MustCompile(`^local function ([A-Za-z_]\w*)`)
	localVars = regexp.MustCompile(`^local ([A-Za-z_][\w, ]*?)\s*=`)
	word      = regexp.MustCompile(`[A-Za-z_]\w*`)
)

// parseUnits splits lib into its top-level definitions, records which of
// them each one refers to, and returns with them the unit defining each
// name. A name that only appears in a whole-line
// comment is not a reference; anywhere else (a trailing comment, a string)
// it counts, which at worst includes a definition the script does not
// need.
func parseUnits(lib string) ([]unit, map[string]int) {
	lines := strings.Split(lib, "\n")
	var starts []int // first line (its comments) of each unit
	for i, l := range lines {
		if strings.HasPrefix(l, "local ") {
			s := i
			for s > 0 && strings.HasPrefix(lines[s-1], "--") {
				s--
			}
			starts = append(starts, s)
		}
	}
	units := make([]unit, len(starts))
	defined := map[string]int{}
	for k, s := range starts {
		end := len(lines)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		u := &units[k]
		u.text = strings.Join(lines[s:end], "\n") + "\n"
		for _, l := range lines[s:end] {
			if m := localFunc.FindStringSubmatch(l); m != nil {
				u.names = append(u.names, m[1])
				break
			}
			if m := localVars.FindStringSubmatch(l); m != nil {
				for n := range strings.SplitSeq(m[1], ",") {
					u.names = append(u.names, strings.TrimSpace(n))
				}
				break
			}
		}
		for _, n := range u.names {
			defined[n] = k
		}
	}
	for k := range units {
		for _, d := range mentions(units[k].text, defined) {
			if d != k {
				units[k].refs = append(units[k].refs, d)
			}
		}
	}
	return units, defined
}

// mentions lists the units whose names text mentions outside whole-line
// comments.
func mentions(text string, defined map[string]int) []int {
	var out []int
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--") {
			continue
		}
		for _, w := range word.FindAllString(l, -1) {
			if d, ok := defined[w]; ok && !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// preludeFor returns the definitions of lib that script needs, in order.
func preludeFor(lib, script string) string {
	units, defined := parseUnits(lib)
	p := prelude{units: units, defined: defined}
	return p.text(p.need(script), header(lib))
}

// prelude is lib.lua parsed: its units, the unit defining each name, and
// which units are evaluated per call when it runs as a function library,
// and of those which only when the call's partition changes (function.go).
type prelude struct {
	units   []unit
	defined map[string]int
	per     []bool
	part    []bool
}

// parsed is the whole prelude parsed once, with every script's text (for
// perCall): every script's source is cut from it (parsing it per script
// cost seconds at start under -race).
var parsed = sync.OnceValue(func() *prelude {
	l := lib()
	units, defined := parseUnits(l)
	var all strings.Builder
	all.WriteString(l)
	for _, b := range Files() {
		all.WriteString(b)
	}
	per := perCall(units, all.String())
	return &prelude{units: units, defined: defined, per: per, part: perPartition(units, per, all.String())}
})

// need marks the units script uses, directly or through other units.
func (p *prelude) need(script string) []bool {
	need := make([]bool, len(p.units))
	stack := mentions(script, p.defined)
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !need[k] {
			need[k] = true
			stack = append(stack, p.units[k].refs...)
		}
	}
	return need
}

// text is head followed by the needed units, in order.
func (p *prelude) text(need []bool, head string) string {
	var b strings.Builder
	b.WriteString(head)
	for k, u := range p.units {
		if need[k] {
			b.WriteString(u.text)
		}
	}
	return b.String()
}

// header is lib's opening comment (the KEYS and ARGV layout), kept so a
// script's text read from Redis documents itself.
func header(lib string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(lib, "\n") {
		if !strings.HasPrefix(l, "--") {
			break
		}
		b.WriteString(l + "\n")
	}
	return b.String() + "\n"
}
