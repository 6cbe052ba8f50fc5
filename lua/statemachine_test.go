package lua

import (
	"io/fs"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// stateMachineDoc is the user's page on job states, written from the
// scripts' headers; TestStateMachine keeps the two in agreement.
const stateMachineDoc = "../docs/state-machine.md"

// Markers in the doc and in the headers' Transitions notation (see the
// doc's "Header notation"): a new job comes from (none), a deleted one
// goes to (deleted).
const (
	fromNone  = "(none)"
	toDeleted = "(deleted)"
)

// transition is one from -> to pair of one script.
type transition struct{ script, from, to string }

// scriptMachine is what one script's header declares.
type scriptMachine struct {
	none    bool                       // "Transitions: none"
	pairs   map[transition]bool        // arrows of the Transitions paragraph
	reasons map[string]map[string]bool // reason -> the targets it is given for
	targets map[string]bool            // every "-> state" anywhere in the header
}

// TestStateMachine checks docs/state-machine.md against the Lua headers:
// the states table lists exactly the states of lib.lua's SCODE; each
// script's Transitions paragraph and the doc's transitions table name the
// same (from, to) pairs for that script; a reason in the table is given in
// the paragraph for that target, and every reason of the paragraph is in
// a row of the table for one of its targets; every "-> state" anywhere in a
// header is a target of that script in the table; and every script is
// named in the doc.
func TestStateMachine(t *testing.T) {
	raw, err := os.ReadFile(stateMachineDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	states := luaStates(t)

	// States table.
	var listed []string
	for _, row := range docTable(t, doc, "## States", "State") {
		listed = append(listed, unquote(row["State"]))
	}
	sort.Strings(listed)
	if !slices.Equal(listed, states) {
		t.Errorf("%s: the States table lists %v; lib.lua's SCODE has %v", stateMachineDoc, listed, states)
	}
	isState := func(s string) bool { _, ok := slices.BinarySearch(states, s); return ok }

	// Transitions table.
	docPairs := map[transition]bool{}
	docReasons := map[string]map[string]map[string]bool{} // script -> reason -> targets
	docTargets := map[string]map[string]bool{}            // script -> targets
	scriptRe := regexp.MustCompile(`\b([a-z_]+)\.lua\b`)
	codeRe := regexp.MustCompile("`([a-z_]+)`")
	for i, row := range docTable(t, doc, "## Transitions", "From", "To", "Script", "Reason") {
		line := func(format string, args ...any) {
			t.Errorf("%s, transitions row %d: "+format, append([]any{stateMachineDoc, i + 1}, args...)...)
		}
		names := scriptRe.FindAllStringSubmatch(row["Script"], -1)
		if len(names) == 0 || slices.ContainsFunc(names, func(m []string) bool { return m[1] != names[0][1] }) {
			line("the Script cell %q must name one script", row["Script"])
			continue
		}
		script := names[0][1]
		if _, err := fs.Stat(files, script+".lua"); err != nil {
			line("no script lua/%s.lua", script)
			continue
		}
		froms, tos := stateList(row["From"]), stateList(row["To"])
		for _, s := range froms {
			if s != fromNone && !isState(s) {
				line("From %q is not a state", s)
			}
		}
		for _, s := range tos {
			if s != toDeleted && !isState(s) {
				line("To %q is not a state", s)
			}
		}
		if len(froms) == 0 || len(tos) == 0 {
			line("From and To must name states")
		}
		if docTargets[script] == nil {
			docTargets[script] = map[string]bool{}
			docReasons[script] = map[string]map[string]bool{}
		}
		for _, to := range tos {
			docTargets[script][to] = true
			for _, from := range froms {
				docPairs[transition{script, from, to}] = true
			}
		}
		for _, m := range codeRe.FindAllStringSubmatch(row["Reason"], -1) {
			if docReasons[script][m[1]] == nil {
				docReasons[script][m[1]] = map[string]bool{}
			}
			for _, to := range tos {
				docReasons[script][m[1]][to] = true
			}
		}
	}
	if len(docPairs) == 0 {
		t.Fatalf("%s: no transitions found in its table", stateMachineDoc)
	}

	// The headers, script by script.
	for _, script := range scriptNames(t) {
		h := headerMachine(t, script, isState)
		if !strings.Contains(doc, script+".lua") {
			t.Errorf("%s does not name %s.lua (list it in the table, or among the scripts that change no state)", stateMachineDoc, script)
		}
		for p := range h.pairs {
			if !docPairs[p] {
				t.Errorf("lua/%s.lua: its header has %s -> %s; %s has no row for it", script, p.from, p.to, stateMachineDoc)
			}
		}
		for p := range docPairs {
			if p.script == script && !h.pairs[p] {
				t.Errorf("%s: row %s -> %s (%s.lua) is not in the Transitions paragraph of lua/%s.lua", stateMachineDoc, p.from, p.to, script, script)
			}
		}
		for reason, tos := range docReasons[script] {
			for to := range tos {
				if !h.reasons[reason][to] {
					t.Errorf("%s: reason %q for %s (%s.lua) is not given for %s in the Transitions paragraph of lua/%s.lua", stateMachineDoc, reason, to, script, to, script)
				}
			}
		}
		for reason, tos := range h.reasons {
			found := false
			for to := range tos {
				found = found || docReasons[script][reason][to]
			}
			if !found {
				t.Errorf("lua/%s.lua: reason %q (for %v) is in no row of %s for %s.lua", script, reason, keys(tos), stateMachineDoc, script)
			}
		}
		for to := range h.targets {
			if !docTargets[script][to] {
				t.Errorf("lua/%s.lua: its header says -> %s; %s has no row of %s.lua to %s", script, to, stateMachineDoc, script, to)
			}
		}
	}
}

// luaStates returns the state names of lib.lua's SCODE, sorted.
func luaStates(t *testing.T) []string {
	t.Helper()
	m := regexp.MustCompile(`(?s)local SCODE = \{(.*?)\}`).FindStringSubmatch(body("lib"))
	if m == nil {
		t.Fatal("lib.lua: no SCODE table")
	}
	var out []string
	for _, e := range regexp.MustCompile(`([a-z]+) = '\d'`).FindAllStringSubmatch(m[1], -1) {
		out = append(out, e[1])
	}
	if len(out) == 0 {
		t.Fatal("lib.lua: SCODE names no state")
	}
	sort.Strings(out)
	return out
}

// scriptNames returns the embedded scripts that are not parts of the
// prelude (lib.lua, lib_*.lua).
func scriptNames(t *testing.T) []string {
	t.Helper()
	names, err := fs.Glob(files, "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		n = strings.TrimSuffix(n, ".lua")
		if n != "lib" && !strings.HasPrefix(n, "lib_") {
			out = append(out, n)
		}
	}
	return out
}

// arrowRe matches one arrow of the notation: from -> to, each side one or
// more words joined by '|' ((none) and (deleted) for no job), and the
// parenthesis right after the target, which holds its quoted reasons.
var arrowRe = regexp.MustCompile(`((?:\(none\)|[a-z]+)(?:\s*\|\s*[a-z]+)*)\s*->\s*((?:\(deleted\)|[a-z]+)(?:\s*\|\s*[a-z]+)*)(?:\s*\(([^()]*)\))?`)

// headerMachine reads the header of script: its leading comment lines.
func headerMachine(t *testing.T, script string, isState func(string) bool) scriptMachine {
	t.Helper()
	h := scriptMachine{pairs: map[transition]bool{}, reasons: map[string]map[string]bool{}, targets: map[string]bool{}}
	var header []string
	for l := range strings.SplitSeq(body(script), "\n") {
		if !strings.HasPrefix(l, "--") {
			break
		}
		header = append(header, l)
	}
	// The Transitions paragraph: its first line and the indented ones below.
	var para []string
	found := 0
	for i, l := range header {
		if !strings.HasPrefix(l, "-- Transitions:") {
			continue
		}
		found++
		para = append(para, strings.TrimPrefix(l, "-- Transitions:"))
		for _, c := range header[i+1:] {
			if !strings.HasPrefix(c, "--   ") {
				break
			}
			para = append(para, c[2:])
		}
	}
	if found != 1 {
		t.Errorf("lua/%s.lua: its header has %d lines starting %q; want 1", script, found, "-- Transitions:")
		return h
	}
	text := strings.Join(strings.Fields(strings.Join(para, " ")), " ")
	h.none = strings.HasPrefix(text, "none")
	arrows := arrowRe.FindAllStringSubmatch(text, -1)
	if h.none && len(arrows) > 0 {
		t.Errorf("lua/%s.lua: Transitions: none, yet %q", script, arrows[0][0])
	}
	if !h.none && len(arrows) == 0 {
		t.Errorf("lua/%s.lua: its Transitions paragraph is neither none nor arrows: %q", script, text)
	}
	quoted := regexp.MustCompile(`'([a-z_]+)'`)
	for _, a := range arrows {
		froms, tos := words(a[1]), words(a[2])
		for _, s := range append(slices.Clone(froms), tos...) {
			if s != fromNone && s != toDeleted && !isState(s) {
				t.Errorf("lua/%s.lua: %q in arrow %q is not a state", script, s, a[0])
			}
		}
		for _, to := range tos {
			for _, from := range froms {
				h.pairs[transition{script, from, to}] = true
			}
			for _, r := range quoted.FindAllStringSubmatch(a[3], -1) {
				if h.reasons[r[1]] == nil {
					h.reasons[r[1]] = map[string]bool{}
				}
				h.reasons[r[1]][to] = true
			}
		}
	}
	// Every "-> state" in the header, in or out of the paragraph (ack.lua's
	// codes list, for one).
	all := strings.Join(header, "\n")
	for _, m := range regexp.MustCompile(`->\s*(?:--\s*)?([a-z]+)`).FindAllStringSubmatch(all, -1) {
		if isState(m[1]) {
			h.targets[m[1]] = true
		}
	}
	for p := range h.pairs {
		if p.to != toDeleted {
			h.targets[p.to] = true
		}
	}
	return h
}

// docTable returns the rows of the first Markdown table after the line
// heading, as column name -> cell; the table must have the columns want.
func docTable(t *testing.T, doc, heading string, want ...string) []map[string]string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		t.Fatalf("%s: no %q section", stateMachineDoc, heading)
	}
	var cols []string
	var rows []map[string]string
	for _, l := range lines[start+1:] {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") {
			if cols != nil {
				break // the end of the table
			}
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case cols == nil:
			cols = cells
			for _, w := range want {
				if !slices.Contains(cols, w) {
					t.Fatalf("%s: the table under %q has no column %q (it has %v)", stateMachineDoc, heading, w, cols)
				}
			}
		case strings.Trim(l, "|-: ") == "":
			// the separator line
		default:
			if len(cells) != len(cols) {
				t.Fatalf("%s: under %q, %d cells where %d columns: %s", stateMachineDoc, heading, len(cells), len(cols), l)
			}
			row := map[string]string{}
			for i, c := range cols {
				row[c] = cells[i]
			}
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table rows under %q", stateMachineDoc, heading)
	}
	return rows
}

// stateList reads a From or To cell: states, comma separated, each in
// backquotes, or (none) or (deleted).
func stateList(cell string) []string {
	var out []string
	for s := range strings.SplitSeq(cell, ",") {
		if s = unquote(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// words splits one side of an arrow at '|'.
func words(side string) []string {
	var out []string
	for w := range strings.SplitSeq(side, "|") {
		out = append(out, strings.TrimSpace(w))
	}
	return out
}

func unquote(s string) string { return strings.Trim(strings.TrimSpace(s), "`") }

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
