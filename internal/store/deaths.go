package store

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// DeathKeep is how long an archived or quarantined job is kept at least,
// whatever its retention (unless negative: deleted at once, with no
// report), so that its pending death report, which its deletion deletes,
// outlives the grace before any worker may take it (30 s) and a taker's
// hold (lua/lib_lifecycle.lua, DEATH_KEEP).
const DeathKeep = 2 * time.Minute

// TakeDeaths takes up to n of p's pending death reports that are due
// (lua/deaths.lua): the jobs that reached archived or quarantined and for
// which no death handler has run, each held for hold so that no other
// worker takes it meanwhile. DoneDeaths drops a report once its handler
// has run; one that is not dropped is due again after hold.
func (s *Store) TakeDeaths(ctx context.Context, p keys.Partition, n int, hold time.Duration) ([]*Job, error) {
	v, err := s.run(ctx, lua.Deaths, p, "take", n, ms(hold)).Slice()
	if err != nil {
		return nil, err
	}
	var out []*Job
	for len(v) > 0 {
		id, _ := v[0].(string)
		flat, rest, err := counted(v[1:])
		if err != nil {
			return out, fmt.Errorf("death report %s: %w", id, err)
		}
		j, err := decodeJob(id, flat)
		if err != nil {
			j = &Job{Local: id, Malformed: err}
		}
		out = append(out, j)
		v = rest
	}
	return out, nil
}

// DoneDeath drops the pending death report of job local of p, whose death
// handler has run for the death of the job with this fence, after this
// many redrives, under this last lease ID ("" for none: Job.Fence,
// Job.Redrives, Job.LastLeaseID): a job redriven and dead again since keeps
// its new report, whether a new attempt raised its fence or a claim
// archived it again with none (a deadline passed, a sticky fallback), and
// so does a job deleted and enqueued again under its ID (its fences start
// over; its lease IDs are its own).
func (s *Store) DoneDeath(ctx context.Context, p keys.Partition, local string, fence int64, redrives int, lease string) error {
	return s.run(ctx, lua.Deaths, p, "done", 1, local, fence, redrives, lease).Err()
}
