// Package lua holds every Redis script Sluice runs, one .lua file each.
//
// Each script is the parts of the shared prelude lib.lua it uses followed
// by the script's own file; the header of every file documents its KEYS, ARGV, return value and
// the job state transitions it makes. Scripts run through redis.Script:
// EVALSHA first, EVAL when the server answers NOSCRIPT (after a restart or
// SCRIPT FLUSH).
package lua

import (
	"embed"
	"strings"

	"github.com/redis/go-redis/v9"
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
	List    = load("list")
	// Deaths delivers pending death reports at least once.
	Deaths = load("deaths")
	// DeadEffects dead-letters outbox entries that cannot be relayed, and
	// sends them back to be relayed again.
	DeadEffects = load("deadfx")
	// Reroute changes a job's preferred worker (sticky routing).
	Reroute = load("reroute")
	// Heartbeat runs alone: the worker registry is not in a partition.
	Heartbeat = redis.NewScript(body("heartbeat"))
	// Relay's keys are in another slot than a partition's: it uses only
	// the prelude's effects, which need none of a partition's keys.
	Relay = load("relay")
	// Schedule runs alone too: schedule keys are not in a partition.
	Schedule = redis.NewScript(body("schedule"))
)

// Source returns the full text of the named script: the parts of the
// prelude it uses (prelude.go), then its own file. For tests and
// debugging.
func Source(name string) string {
	b := body(name)
	units, defined := parsed()
	return preludeOf(units, defined, header(lib()), b) + b
}

// libParts are the prelude's files, in the order they are joined: a Lua
// local can only refer to locals defined above it.
var libParts = []string{
	"lib", "lib_chunks", "lib_batch", "lib_ready", "lib_limits", "lib_lifecycle", "lib_effects", "lib_replay",
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

func load(name string) *redis.Script {
	return redis.NewScript(Source(name))
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
