// Package lua holds every Redis script Sluice runs, one .lua file each.
//
// Each script is the parts of the shared prelude lib.lua it uses followed
// by the script's own file; the header of every file documents its KEYS, ARGV, return value and
// the job state transitions it makes. Scripts run as Redis functions
// where the server has them (function.go, script.go: the prelude's
// definitions are made once, at FUNCTION LOAD, not on every call), and
// through EVALSHA elsewhere.
package lua

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
)

//go:embed *.lua
var files embed.FS

// Scripts by name; each is what it uses of lib.lua followed by <name>.lua.
var (
	Enqueue = load("enqueue")
	Claim   = load("claim")
	Renew   = load("renew")
	Ack     = load("ack")
	// Maintain is a worker's maintenance pass over a partition: reap
	// expired leases, promote due jobs, delete expired finished jobs.
	Maintain = load("maintain")
	Step     = load("step")
	Notify   = load("notify")
	// Stuck and Progress record what operators see of running attempts.
	Stuck    = load("stuck")
	Progress = load("progress")
	// Operator scripts (flow.Client's admin calls).
	Cancel  = load("cancel")
	Delete  = load("delete")
	Pause   = load("pause")
	Redrive = load("redrive")
	// Live reads a partition's counters for a live dashboard.
	Live = load("live")
	// RunNow makes a scheduled or retryable job available at once.
	RunNow = load("runnow")
	// BulkDelete deletes the jobs a selector chooses, a bounded step at a
	// time.
	BulkDelete = load("bulkdelete")
	List       = load("list")
	// Deaths delivers pending death reports at least once.
	Deaths = load("deaths")
	// DeadEffects dead-letters outbox entries that cannot be relayed, and
	// sends them back to be relayed again.
	DeadEffects = load("deadfx")
	// Reroute changes a job's preferred worker (sticky routing).
	Reroute = load("reroute")
	// Watch marks a job a caller waits for (flow.Client.Wait), so that
	// finishing it publishes on its partition's channel.
	Watch = load("watch")
	// Signal sends a signal to a job (lib_waits.lua).
	Signal = load("signal")
	// Unsignal discards the next signal of one name kept for a job.
	Unsignal = load("unsignal")
	// Heartbeat runs alone: the worker registry is not in a partition.
	Heartbeat = loadAlone("heartbeat")
	// Layout registers and resizes queue layouts; it runs alone, on the
	// namespace's registry of queues.
	Layout = loadAlone("layout")
	// Retention records a worker's retention for the queues it serves,
	// where no worker that started later recorded its own; it runs alone,
	// on the namespace's hash of retention records.
	Retention = loadAlone("retention")
	// Relay's keys are in another slot than a partition's: it uses only
	// the prelude's effects, which need none of a partition's keys.
	Relay = load("relay")
	// Schedule's keys are not in a partition either: it uses only what of
	// the prelude needs none (the store's time, the statuses).
	Schedule = load("schedule")
)

// All is every script, by the name of its file.
func All() map[string]*Script {
	return map[string]*Script{
		"enqueue": Enqueue, "claim": Claim, "renew": Renew, "ack": Ack, "maintain": Maintain,
		"step": Step, "notify": Notify, "stuck": Stuck, "progress": Progress, "cancel": Cancel,
		"delete": Delete, "pause": Pause, "redrive": Redrive, "list": List, "deaths": Deaths,
		"deadfx": DeadEffects, "reroute": Reroute, "watch": Watch, "signal": Signal,
		"unsignal":  Unsignal,
		"heartbeat": Heartbeat, "relay": Relay, "schedule": Schedule, "runnow": RunNow, "live": Live, "layout": Layout,
		"bulkdelete": BulkDelete, "retention": Retention,
	}
}

// Source returns the full text of the named script: the parts of the
// prelude it uses (prelude.go), then its own file. For tests and
// debugging.
func Source(name string) string {
	b := body(name)
	p := parsed()
	return p.text(p.need(b), header(lib())) + b
}

// libParts are the prelude's files, in the order they are joined: a Lua
// local can only refer to locals defined above it.
var libParts = []string{
	"lib", "lib_names", "lib_chunks", "lib_batch", "lib_ready", "lib_limits", "lib_lifecycle", "lib_admin", "lib_waits", "lib_effects",
	"lib_enqueue", "lib_pack", "lib_replay", "lib_offer",
}

// lib is the whole prelude.
func lib() string {
	var b strings.Builder
	for _, name := range libParts {
		b.WriteString(body(name))
		b.WriteString("\n")
	}
	return b.String()
}

// load is the named script: what it uses of the prelude, then its file
// (the EVAL text opened by gopherShim, its body in a function of its own,
// evalBody; the library built by libraryOf). Its texts are built at its
// first use, not at program start: a process (a CLI, an isolated child)
// pays only for the scripts it runs.
func load(name string) *Script {
	b := body(name) // a missing file fails at start
	return &Script{build: func() (string, string) {
		p := parsed()
		need := p.need(b)
		head := header(lib())
		return gopherShim + p.text(need, head) + evalBody(b), libraryOf(p.units, need, p.per, p.part, head, b)
	}}
}

// evalBody is a script's body as its EVAL text holds it: a function of its
// own, called at once, as the library holds it (libraryOf). Lua allows a
// function 200 locals, and gopher-lua (miniredis) 200 registers, locals
// and the temporaries of its expressions together: with the body at the
// chunk's top level, beside the prelude's definitions, the ack script had
// fewer than 8 to spare, and a script could not grow by the prelude it
// needs. The body's own locals now count apart from the prelude's, as they
// do in the library. Its line numbers are the file's (the function opens
// on the body's first line), so an error names the line it would without.
func evalBody(b string) string { return evalOpen + b + "\nend)()\n" }

// evalOpen opens a script's body in its EVAL text (evalBody).
const evalOpen = "return (function() "

// loadAlone is the named script, which uses nothing of the prelude (its
// EVAL text opened by gopherShim all the same, its body a function as
// every script's).
func loadAlone(name string) *Script {
	b := body(name)
	return &Script{build: func() (string, string) { return gopherShim + evalBody(b), libraryOf(nil, nil, nil, nil, "", b) }}
}

func body(name string) string {
	b, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic("lua: missing embedded script " + name + ".lua")
	}
	return string(b)
}

// Prelude is the whole prelude, every part joined: for tests that check
// it against Go (internal/keys names the same keys).
func Prelude() string { return lib() }

// Files returns every embedded .lua file as written (the prelude's parts
// and the scripts, without a prelude), by file name: for tests that read
// the sources.
func Files() map[string]string {
	out := map[string]string{}
	names, _ := fs.Glob(files, "*.lua")
	for _, n := range names {
		out[n] = body(strings.TrimSuffix(n, ".lua"))
	}
	return out
}

// Name is one entry of a table of names in lib_names.lua: F (the fields of
// a job hash) or STATUS (what scripts answer).
type Name struct {
	Key     string // the Lua name, as in F.state
	Value   string // a string's contents, or a number's digits
	Number  bool   // Value is a number (a status in place of a due time)
	Comment string // the comment line above the entry, without "-- "
}

var (
	nameComment = regexp.MustCompile(`^  -- (.+)$`)
	nameEntry   = regexp.MustCompile(`^  ([a-z][a-z0-9_]*) = (?:'([^'\\]*)'|(-?[0-9]+)),$`)
)

// Names reads the prelude's table of names table ("F" or "STATUS"), for
// tests that check Go's names against it. Every entry must have a
// comment line of its own above it, and nothing else may be in the
// table: a line this reader does not understand is an error, so that no
// entry can hide from the tests.
func Names(table string) ([]Name, error) {
	lines := strings.Split(body("lib_names"), "\n")
	start := -1
	for i, l := range lines {
		if l == "local "+table+" = {" {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("lib_names.lua: no table %s", table)
	}
	var out []Name
	comment := ""
	for i := start; i < len(lines); i++ {
		l := lines[i]
		if l == "}" {
			if comment != "" {
				return nil, fmt.Errorf("lib_names.lua:%d: a comment with no entry below it", i)
			}
			return out, nil
		}
		if m := nameComment.FindStringSubmatch(l); m != nil {
			if comment != "" {
				return nil, fmt.Errorf("lib_names.lua:%d: one comment line per entry", i+1)
			}
			comment = m[1]
			continue
		}
		m := nameEntry.FindStringSubmatch(l)
		if m == nil {
			return nil, fmt.Errorf("lib_names.lua:%d: %q is neither an entry (  name = 'value',) nor a comment line", i+1, l)
		}
		if comment == "" {
			return nil, fmt.Errorf("lib_names.lua:%d: %s has no comment line above it", i+1, m[1])
		}
		n := Name{Key: m[1], Value: m[2], Comment: comment}
		if m[3] != "" {
			n.Value, n.Number = m[3], true
		}
		out = append(out, n)
		comment = ""
	}
	return nil, fmt.Errorf("lib_names.lua: table %s does not end", table)
}
