package flow

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/mpack"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// Job is one attempt of a job of type T, as its handler sees it.
type Job[T Args] struct {
	ID           string
	Queue        string
	Kind         string
	Args         T
	Headers      map[string]string
	Priority     int
	Attempt      int // returned errors so far (0 on the first try)
	CrashAttempt int // crashes so far (panics, lost leases)
	MaxAttempts  int
	Created      time.Time         // enqueue time in store time, or the producer's when within 50 ms of it
	Claimed      time.Time         // when this attempt was claimed, in store time
	Deadline     time.Time         // zero: none
	Orphan       sluicetype.Orphan // set when the job was reclaimed after a crash
	// Fence and LeaseID identify this attempt; every write Sluice makes for
	// it checks them.
	Fence   int64
	LeaseID string
}

func newJob[T Args](a *runtime.Attempt) (*Job[T], error) {
	j := &Job[T]{
		ID: a.ID, Queue: a.Queue, Kind: a.Kind, Priority: a.Priority, Attempt: a.Attempt,
		CrashAttempt: a.CrashAttempt, MaxAttempts: a.MaxAttempts, Created: a.Created, Claimed: a.Claimed,
		Deadline: a.Deadline, Orphan: a.Orphan, Fence: a.Fence, LeaseID: a.LeaseID,
	}
	if err := mpack.Unmarshal(a.Payload, &j.Args); err != nil {
		return nil, fmt.Errorf("decoding %s arguments: %w", a.Kind, err)
	}
	if len(a.Headers) > 0 {
		if err := mpack.Unmarshal(a.Headers, &j.Headers); err != nil {
			return nil, fmt.Errorf("decoding %s headers: %w", a.Kind, err)
		}
	}
	return j, nil
}
