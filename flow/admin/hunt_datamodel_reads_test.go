package admin_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestHuntJobReadAtNewerDataModel: once a newer release has raised a
// partition's data model (`{ns:queue:p}:dm`), this release does not know
// what the partition's keys mean: docs/errors.md says its scripts refuse
// it with ErrNewerDataModel, and a listing of the partition does
// (ListJobs). A read of one job by ID (admin.Client.Job, flow.Client.Job,
// `sluice jobs show`, the console's job page) read the job's hash with
// this release's meaning anyway and answered it as if it were current, no
// error, so the operator is shown data the tool cannot read (and, e.g.,
// told a job is available that the newer model keeps elsewhere).
func TestHuntJobReadAtNewerDataModel(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	id := a.enqueue(email{To: "ann"})
	p := keys.Partition{NS: a.ns, Queue: "default", Index: 0}
	if err := a.st.Client().Set(a.ctx, p.DataModel(), store.DataModel+1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ops.ListJobs(a.ctx, adminList("default", flow.StateAvailable)); !errors.Is(err, flow.ErrNewerDataModel) {
		t.Fatalf("ListJobs at a newer data model: %v, want ErrNewerDataModel (the documented refusal)", err)
	}
	j, err := a.ops.Job(a.ctx, id)
	if !errors.Is(err, flow.ErrNewerDataModel) {
		state := ""
		if j != nil {
			state = j.State
		}
		t.Errorf("Job(%s) at a newer data model: state %q, err %v; want ErrNewerDataModel, as the listing of the same partition answers", id, state, err)
	}
}

// TestHuntQueueStatsAtNewerDataModel: QueueStats (`sluice queues stats`)
// of a queue whose partition a newer release has raised to its data
// model read the partition's counters with this release's meaning and
// answered them, no error; the console's live counters of the same queue
// (QueuesLive, lua/live.lua) refuse the partition with ErrNewerDataModel.
func TestHuntQueueStatsAtNewerDataModel(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	a.enqueue(email{To: "ann"})
	p := keys.Partition{NS: a.ns, Queue: "default", Index: 0}
	if err := a.st.Client().Set(a.ctx, p.DataModel(), store.DataModel+1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	live, err := a.ops.QueuesLive(a.ctx, map[string]int{"default": 0})
	if err != nil || len(live) != 1 || !errors.Is(live[0].Err, flow.ErrNewerDataModel) {
		t.Fatalf("QueuesLive at a newer data model: %+v, %v; want the queue's Err to be ErrNewerDataModel", live, err)
	}
	st, err := a.ops.QueueStats(a.ctx, "default", 5*time.Minute)
	if !errors.Is(err, flow.ErrNewerDataModel) {
		t.Errorf("QueueStats at a newer data model: depth %v, err %v; want ErrNewerDataModel, as QueuesLive says of the same queue", st.Depth, err)
	}
}

func adminList(queue, state string) admin.ListOptions {
	return admin.ListOptions{Queue: queue, State: state}
}
