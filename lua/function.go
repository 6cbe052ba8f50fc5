package lua

import (
	"regexp"
	"slices"
	"strings"
)

// A script's prelude is mostly definitions, and EVAL runs a script's whole
// text on every call: defining the ack script's helpers cost about 35 µs
// of Redis CPU per call, more than most calls' own work. A Redis function
// library runs its top level once, at FUNCTION LOAD; a call runs only the
// registered callback. So each script is also built as a library
// (libraryOf): the prelude at its top level, the script's body as the
// callback. What the prelude computes from a call (KEYS, ARGV, the store's
// time, the partition's key names) and the state a call accumulates (the
// batched counters, the flags a call sets) cannot be computed at load
// time: those definitions (perCall) become locals declared at load and
// assigned afresh by begin_call at the start of every call, in their
// original order; an empty table is made at load and replaced only when
// the call before left something in it. Redis runs one call at a time, so
// a call never sees another's values.

var (
	// callInputs are what only a call provides.
	callInputs = regexp.MustCompile(`\b(KEYS|ARGV|redis)\b`)
	emptyTable = regexp.MustCompile(`^\{\s*\}`)
	// What globalUse removes before looking for names: string literals,
	// numbers, a table constructor's keys.
	luaStrings = regexp.MustCompile(`'[^']*'|"[^"]*"`)
	luaNumbers = regexp.MustCompile(`\b\d[\w.]*`)
	tableKeys  = regexp.MustCompile(`\b[A-Za-z_]\w*\s*=[^=]`)
	// fieldName is a field read by name, 'T.name' (not a concatenation,
	// 'a..b'): the name is the field's, not a variable's.
	fieldName = regexp.MustCompile(`([^.])\.\s*[A-Za-z_]\w*`)
	// localDecl is the head of a declaration, 'local a, b =': what
	// follows it is a value, not an assignment of a or b.
	localDecl = regexp.MustCompile(`\blocal\s+[A-Za-z_][\w, ]*=`)
	keywords  = map[string]bool{"true": true, "false": true, "nil": true, "and": true, "or": true, "not": true}
)

// perCall reports, for each unit of the prelude, whether it must be
// evaluated on every call rather than once at load: a variable whose
// initial value reads what a call provides (callInputs, a per-call
// variable, or a function that reads either), uses a global (Redis loads
// a library with none: not even string or tonumber), is an empty table
// (filled by calls), or is assigned or written into anywhere (in the
// prelude or in any script's text, code). Function definitions never are:
// they read such variables only when called.
func perCall(units []unit, code string) []bool {
	out := make([]bool, len(units))
	var per []string // per-call variables and the functions that read call inputs
	local := map[string]bool{}
	written := assigned(code)
	for k, u := range units {
		_, init, ok := splitDecl(u.text)
		if !ok {
			if callInputs.MatchString(stripComments(u.text)) || mentionsAny(u.text, per) {
				per = append(per, u.names...)
			}
			for _, n := range u.names {
				local[n] = true
			}
			continue
		}
		switch {
		case callInputs.MatchString(stripComments(init)):
		case globalUse(init, local):
		case emptyTable.MatchString(strings.TrimSpace(init)):
		case mentionsAny(init, per):
		case slices.ContainsFunc(u.names, func(n string) bool { return written[n] }):
		default:
			for _, n := range u.names {
				local[n] = true
			}
			continue
		}
		out[k] = true
		per = append(per, u.names...)
		for _, n := range u.names {
			local[n] = true
		}
	}
	return out
}

// perPartition reports, for each unit evaluated per call (per), whether
// its value follows from the call's partition alone: built from PFX (the
// partition's key prefix, ARGV[2]) by concatenation with string literals,
// or the partition's keys as partition_keys names them, or from other
// such values, and assigned nowhere else (code). Such a value is the same
// in every call on the partition, so begin_call computes it afresh only
// when a call's partition is not the one of the call before, which most
// calls follow: the key names cost a one-job enqueue about 5% of its
// Redis instructions.
func perPartition(units []unit, per []bool, code string) []bool {
	out := make([]bool, len(units))
	written := assigned(code)
	from := map[string]bool{"PFX": true}
	for k, u := range units {
		_, init, ok := splitDecl(u.text)
		if !per[k] || !ok || slices.ContainsFunc(u.names, func(n string) bool { return written[n] }) {
			continue
		}
		c := strings.ReplaceAll(stripComments(init), "unpack(partition_keys(KEYS, PFX),", "(PFX,")
		c = luaNumbers.ReplaceAllString(luaStrings.ReplaceAllString(c, ""), "")
		if strings.Trim(word.ReplaceAllString(c, ""), " \t\n.,()") != "" ||
			slices.ContainsFunc(word.FindAllString(c, -1), func(w string) bool { return !from[w] }) {
			continue
		}
		out[k] = true
		for _, n := range u.names {
			from[n] = true
		}
	}
	return out
}

// globalUse reports whether the initial value init calls a function or
// names anything but the prelude's locals defined above it.
func globalUse(init string, local map[string]bool) bool {
	code := luaStrings.ReplaceAllString(stripComments(init), "''")
	if strings.Contains(code, "(") {
		return true
	}
	code = tableKeys.ReplaceAllString(luaNumbers.ReplaceAllString(code, "0"), "")
	code = fieldName.ReplaceAllString(code, "$1")
	for _, w := range word.FindAllString(code, -1) {
		if !local[w] && !keywords[w] {
			return true
		}
	}
	return false
}

// splitDecl splits a variable unit's text at its 'local NAMES =' line:
// decl is the text up to and including 'local NAMES' (its comments
// first), init the initial value's text. ok is false for a function.
func splitDecl(text string) (decl, init string, ok bool) {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "--") {
			continue
		}
		if localFunc.MatchString(l) {
			return "", "", false
		}
		m := localVars.FindStringSubmatchIndex(l)
		if m == nil {
			return "", "", false
		}
		eq := strings.Index(l[m[3]:], "=") + m[3]
		head := strings.Join(lines[:i], "\n")
		if head != "" {
			head += "\n"
		}
		rest := l[eq+1:]
		if i+1 < len(lines) {
			rest += "\n" + strings.Join(lines[i+1:], "\n")
		}
		return head + strings.TrimRight(l[:eq], " "), rest, true
	}
	return "", "", false
}

// emptyTables reports whether init, a declaration's initial value,
// is n empty tables and nothing else ('{}, {} -- a comment').
func emptyTables(init string, n int) bool {
	parts := strings.Split(strings.TrimSpace(stripComments(init)), ",")
	if len(parts) != n {
		return false
	}
	for _, p := range parts {
		if strings.TrimSpace(p) != "{}" {
			return false
		}
	}
	return true
}

// stripComments drops Lua line comments ('--' to the end of the line).
func stripComments(s string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(s, "\n") {
		if i := strings.Index(l, "--"); i >= 0 {
			l = l[:i]
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// mentionsAny reports whether code mentions one of names as a word.
func mentionsAny(code string, names []string) bool {
	code = stripComments(code)
	for _, w := range word.FindAllString(code, -1) {
		for _, n := range names {
			if w == n {
				return true
			}
		}
	}
	return false
}

// assignTarget finds what a line assigns or writes into as a table
// ('NAME = ...', 'NAME[k] = ...', and the first of 'NAME, b = ...').
var assignTarget = regexp.MustCompile(`(?:^|[^.\w])([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?(?:,[^=]*)?=[^=]`)

// assigned lists the names code assigns or writes into as a table other
// than in a declaration of that name (its own, or a local that shadows
// it), in one pass over code.
func assigned(code string) map[string]bool {
	out := map[string]bool{}
	for l := range strings.SplitSeq(stripComments(code), "\n") {
		if !strings.Contains(l, "=") {
			continue
		}
		l = localDecl.ReplaceAllString(l, "")
		for _, m := range assignTarget.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		// 'a, b = ...' at the start of a statement assigns every name
		if m := multiAssign.FindStringSubmatch(l); m != nil {
			for n := range strings.SplitSeq(m[1], ",") {
				out[strings.TrimSpace(n)] = true
			}
		}
	}
	return out
}

// multiAssign is a statement that assigns a list of names.
var multiAssign = regexp.MustCompile(`^\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)\s*=[^=]`)

// fnName stands for the function's name in a library's text until it is
// known: the SHA-1 of the text with fnName in it (newScript).
const fnName = "FUNCTION_NAME"

// libraryOf builds the function library of a script: the units the
// script uses (need) of the prelude (units, with per from perCall and
// part from perPartition), head
// the prelude's header comment, body the script's own text. The library
// and its one function are named fnName.
func libraryOf(units []unit, need, per, part []bool, head, body string) string {
	var b, begin, names strings.Builder
	b.WriteString("#!lua name=s" + fnName + "\n")
	b.WriteString(head)
	b.WriteString("local KEYS, ARGV\n")
	for k, u := range units {
		if !need[k] {
			continue
		}
		if !per[k] {
			b.WriteString(u.text)
			continue
		}
		decl, init, _ := splitDecl(u.text)
		if part[k] {
			// computed together, where the first of them was, once PFX is
			// set (they read nothing else of the call)
			if names.Len() == 0 {
				begin.WriteString("  if NAMES_FOR ~= PFX then name_partition() end\n")
			}
			b.WriteString(decl + "\n")
			names.WriteString("  " + strings.Join(u.names, ", ") + " =" + init + "\n")
			continue
		}
		if emptyTables(init, len(u.names)) {
			// made once and kept while a call leaves them empty, as most
			// calls leave most of them: a table costs a call about 0.6 µs
			b.WriteString(decl + " =" + init + "\n")
			for _, n := range u.names {
				begin.WriteString("  if next(" + n + ") ~= nil then " + n + " = {} end\n")
			}
			continue
		}
		b.WriteString(decl + "\n")
		begin.WriteString("  " + strings.Join(u.names, ", ") + " =" + init + "\n")
	}
	if names.Len() > 0 {
		// NAMES_FOR is the partition prefix of the names computed last. A
		// function of their own keeps them off begin_call's upvalues, of
		// which Redis's Lua allows 60 to a function (ack's and claim's
		// begin_call came to 57 with them).
		b.WriteString("local NAMES_FOR\nlocal function name_partition()\n" + names.String() + "  NAMES_FOR = PFX\nend\n")
	}
	b.WriteString("local function begin_call(keys, args)\n  KEYS, ARGV = keys, args\n")
	if strings.Contains(begin.String(), "if next(") {
		// one global lookup for the empty-table checks, not one each:
		// 2,200 of a one-job enqueue's 148,500 instructions
		b.WriteString("  local next = next\n")
	}
	b.WriteString(begin.String())
	b.WriteString("end\n")
	b.WriteString("redis.register_function('" + fnName + "', function(keys, args)\nbegin_call(keys, args)\n")
	b.WriteString(body)
	b.WriteString("\nend)\n")
	return b.String()
}
