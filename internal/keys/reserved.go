package keys

import "strings"

// partitionNames are the names, after a partition's prefix, of the keys
// Sluice keeps there whole ("stats"); partitionFamilies the first
// segments of those it keeps one of per job, worker or class ("j:" then
// an ID). Both follow the Partition methods above, which
// TestReservedCoversEveryPartitionKey calls one by one. Every other name
// under a partition's tag is the user's: idempotency.SlotKey's "u:", and
// any a user put the tag in by hand ("{ns:q:0}:balance").
var (
	partitionNames = map[string]bool{
		"dd": true, "wch": true, "outbox": true, "sched": true, "later": true,
		"run": true, "stats": true, "pm": true, "completed": true, "archived": true,
		"quarantined": true, "cancelled": true, "idle": true, "cc": true,
		"rwake": true, "paused": true, "cwn": true, "pinx": true, "pinw": true, "dm": true,
	}
	partitionFamilies = map[string]bool{
		"j": true, "e": true, "b": true, "s": true, "k": true, "kc": true,
		"uq": true, "qh": true, "qw": true, "qn": true, "x": true, "rc": true,
		"fu": true, "nm": true, "avail": true, "m": true, "rl": true, "rw": true,
		"rg": true, "cw": true, "pin": true, "later": true, "outbox": true,
	}
)

// Reserved reports whether key is one Sluice keeps for namespace ns, or
// could: a job's hash, its checkpoints, a partition's indexes and
// counters, the registry of queues, workers and schedules, a relayed
// effect's marker. A step's or a completion's effect must not write one:
// an HSET of a job's hash would change its state under the scripts, and
// a SET of a marker would make a relayed effect be skipped.
func Reserved(ns, key string) bool {
	if strings.HasPrefix(key, ns+":fx:") {
		return true
	}
	open := "{" + ns + ":"
	if !strings.HasPrefix(key, open) {
		return false
	}
	end := strings.IndexByte(key, '}')
	if end < 0 {
		return false // no hash tag: the name only looks like one of ours
	}
	inner, rest := key[len(open):end], key[end+1:]
	switch inner {
	case "queues", "workers", "sched":
		return true
	}
	cut := strings.LastIndexByte(inner, ':')
	if cut <= 0 || !digits(inner[cut+1:]) {
		return false // not a partition's tag
	}
	if !strings.HasPrefix(rest, ":") {
		return false
	}
	family, _, more := strings.Cut(rest[1:], ":")
	if more {
		return partitionFamilies[family]
	}
	return partitionNames[family]
}

// digits reports whether s is a non-empty run of ASCII digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
