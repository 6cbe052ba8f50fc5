package web

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
)

// maxChildrenShown bounds the children a job page lists, over all its
// spawning steps; their states are one pipelined read.
const maxChildrenShown = 100

// spawnGroup is what one spawning step (flow.Spawn, flow.Call) made.
type spawnGroup struct {
	Step     string
	Spawned  int
	Finished int  // of them, those the parent's record says finished
	Failed   int  // ... and did not complete
	AtLeast  bool // the parent's record was read in part: Finished and Failed are at least these
	Kids     []childRow
}

// childRow is one spawned child.
type childRow struct {
	Index int
	ID    string
	State string // its state now, "" when it no longer exists or cannot be read (Err)
	Ended string // the state it finished in, as the parent's record says; "" while not finished
	Err   string // why it cannot be read (corrupt data, a newer data model); "" when it can
}

// children finds what j spawned. Spawn checkpoints its step with the
// children's full IDs, each ID within its partition being the parent's,
// the step's name and the item's index joined by "~": a step whose result
// is such a list is a spawning step, and the list names every child,
// finished or not. x.Children (the parent's record of finished children,
// by ID within the partition) says which finished. The children listed
// are read for their state now in one round trip. It returns the groups
// and the finished children no spawning step names (by ID within their
// partition: the parent's record keeps no more).
func (c *console) children(ctx context.Context, j *flow.JobInfo, x admin.JobExtras) ([]spawnGroup, []admin.ChildInfo, error) {
	parentLocal := localOf(j.ID)
	ended := make(map[string]string, len(x.Children))
	for _, k := range x.Children {
		ended[k.Local] = k.State
	}
	named := map[string]bool{}
	var groups []spawnGroup
	var shown []string
	for _, s := range j.Steps {
		if s.Cursor {
			continue
		}
		var ids []string
		if err := j.DecodeStep(s.Name, &ids); err != nil || !spawnedBy(ids, parentLocal, j.Created, s.Name) {
			continue
		}
		g := spawnGroup{Step: s.Name, Spawned: len(ids), AtLeast: x.MoreChildren}
		for i, id := range ids {
			local := localOf(id)
			named[local] = true
			st, done := ended[local]
			if done {
				g.Finished++
				if st != flow.StateCompleted {
					g.Failed++
				}
			}
			if len(shown) < maxChildrenShown {
				g.Kids = append(g.Kids, childRow{Index: i, ID: id, Ended: st})
				shown = append(shown, id)
			}
		}
		groups = append(groups, g)
	}
	var others []admin.ChildInfo
	for _, k := range x.Children {
		if !named[k.Local] {
			others = append(others, k)
		}
	}
	if len(shown) == 0 {
		return groups, others, nil
	}
	briefs, err := c.ops.JobBriefs(ctx, shown)
	if err != nil {
		return groups, others, err
	}
	for gi := range groups {
		for ki := range groups[gi].Kids {
			k := &groups[gi].Kids[ki]
			b := briefs[k.ID]
			k.State = b.State
			if b.Err != nil {
				k.Err = b.Err.Error()
			}
		}
	}
	return groups, others, nil
}

// spawnedBy reports whether ids are the children step spawned of the job
// whose ID within its partition is parent, enqueued at created: each,
// within its partition, is keys.ChildLocal's (or keys.LegacyChildLocal's,
// for a spawn checkpointed by an older release).
func spawnedBy(ids []string, parent string, created time.Time, step string) bool {
	if len(ids) == 0 {
		return false
	}
	for i, id := range ids {
		if l := localOf(id); l != keys.ChildLocal(parent, created, step, i) && l != keys.LegacyChildLocal(parent, step, i) {
			return false
		}
	}
	return true
}

// localOf is the ID within its partition of job id (queue:partition:local),
// "" when id is not of that form.
func localOf(id string) string {
	ref, _ := keys.ParseRef("", id)
	return ref.Local
}
