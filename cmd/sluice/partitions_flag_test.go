package main

import (
	"testing"
)

// TestPartitionsGivenTwice: --partitions that names one queue with two
// counts is a usage error (exit 2). A helper's audit found the first
// count dropped without a word, so a check the operator asked for
// (default=2) was not made and the command exited 0 on a queue of 1
// partition. The same count twice is no contradiction.
func TestPartitionsGivenTwice(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("a", email{To: "a@example.com"}) // default: 1 partition
	for _, args := range [][]string{
		{"--partitions", "default=2,default=1", "queues", "list"},
		{"--partitions", "default=2", "--partitions", "default=1", "queues", "list"},
	} {
		out, errs, code := f.sluice(args...)
		if code != exitUsage {
			t.Errorf("sluice %q: exit %d (stdout %q, stderr %q); want a usage error (exit %d)", args, code, out, errs, exitUsage)
		}
	}
	f.must("--partitions", "default=1,default=1", "queues", "list")
}
