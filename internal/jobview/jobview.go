// Package jobview words a job's counters for people, the same way in the
// CLI's jobs show and the console's job page.
package jobview

import (
	"fmt"

	"github.com/sluicehq/sluice/flow"
)

// Attempts says how many attempts failed against which limit, and how
// many crashed: "2 failed (limit 3), 1 crash". The limit is MaxAttempts,
// and each redrive of a job whose attempts were spent allows one more,
// the counter being kept ("4 failed (limit 3, +1 per redrive)"). Attempt
// counts failures, not runs: a completed job that never failed reads
// "0 failed", not "0 of 25".
func Attempts(j *flow.JobInfo) string {
	s := fmt.Sprintf("%d failed (limit %d", j.Attempt, j.MaxAttempts)
	if j.Redrives > 0 {
		s += ", +1 per redrive"
	}
	crashes := "crashes"
	if j.CrashAttempt == 1 {
		crashes = "crash"
	}
	return s + fmt.Sprintf("), %d %s", j.CrashAttempt, crashes)
}
