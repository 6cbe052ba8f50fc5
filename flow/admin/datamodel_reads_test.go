package admin_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestJobReadAtNewerDataModel: once a newer release has raised a
// partition's data model (`{ns:queue:p}:dm`), this release does not know
// what the partition's keys mean: its scripts refuse the partition with
// ErrNewerDataModel (docs/errors.md), and so does a listing of it
// (ListJobs) and a read of one job by ID (admin.Client.Job,
// flow.Client.Job, `sluice jobs show`, the console's job page), which
// otherwise would show the operator data the tool cannot read (a job
// available, say, that the newer model keeps elsewhere).
func TestJobReadAtNewerDataModel(t *testing.T) {
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

// TestQueueStatsAtNewerDataModel: QueueStats (`sluice queues stats`) of
// a queue whose partition a newer release has raised to its data model
// refuses it with ErrNewerDataModel, as the console's live counters of the
// same queue (QueuesLive, lua/live.lua) do, rather than answer counters
// read with this release's meaning.
func TestQueueStatsAtNewerDataModel(t *testing.T) {
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

// TestOperatorReadsAtNewerDataModel: every operator's read of a
// partition refuses it once a newer release has raised its data model
// (ErrNewerDataModel), whether a script reads it or a pipeline does: the
// job page (Job, JobExtras, JobBriefs for that job), the queue's counters
// and history, its dead effects (their count and their listing), a bulk
// delete's count; the listing of queues leaves that queue out and names
// it, where it showed its paused flags as this release reads them.
func TestOperatorReadsAtNewerDataModel(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	id := a.enqueue(email{To: "ann"})
	a.enqueue(email{To: "bob"}, flow.WithQueue("other")) // a queue at this model
	p := keys.Partition{NS: a.ns, Queue: "default", Index: 0}
	// a dead effect, as the relay leaves one
	testkit.Must(t, a.st.Client().XAdd(a.ctx, &redis.XAddArgs{Stream: p.DeadOutbox(), Values: []string{"id", "e1", "job", id, "error", "boom"}}).Err())
	testkit.Must(t, a.st.Client().Set(a.ctx, p.DataModel(), store.DataModel+1, 0).Err())
	reads := []struct {
		name string
		read func() error
	}{
		{"Job", func() error { _, err := a.ops.Job(a.ctx, id); return err }},
		{"JobExtras", func() error { _, err := a.ops.JobExtras(a.ctx, id); return err }},
		{"JobBriefs", func() error {
			bs, err := a.ops.JobBriefs(a.ctx, []string{id})
			if err != nil {
				return err
			}
			return bs[id].Err
		}},
		{"QueueStats", func() error { _, err := a.ops.QueueStats(a.ctx, "default", 5*time.Minute); return err }},
		{"QueueHistory", func() error { _, err := a.ops.QueueHistory(a.ctx, "default", 0, 5); return err }},
		{"DeadEffectCount", func() error { _, err := a.ops.DeadEffectCount(a.ctx, "default"); return err }},
		{"DeadEffects", func() error { _, err := a.ops.DeadEffects(a.ctx, "default", 0); return err }},
		{"ListJobs", func() error { _, err := a.ops.ListJobs(a.ctx, adminList("default", flow.StateAvailable)); return err }},
		{"DeleteSelected", func() error {
			_, err := a.ops.DeleteSelected(a.ctx, admin.Selector{Queue: "default", State: flow.StateCompleted}, admin.DeleteOptions{})
			return err
		}},
	}
	for _, r := range reads {
		if err := r.read(); !errors.Is(err, flow.ErrNewerDataModel) {
			t.Errorf("%s at a newer data model: %v, want ErrNewerDataModel", r.name, err)
		}
	}
	// the listing of queues leaves the queue it cannot read out, names it,
	// and lists the others
	qs, err := a.ops.Queues(a.ctx)
	es, only := store.EntryErrors(err)
	if !only || len(es) != 1 || es[0].Name != "default" || !errors.Is(err, flow.ErrNewerDataModel) {
		t.Errorf("Queues: %v, want the error of queue default alone, ErrNewerDataModel", err)
	}
	if len(qs) != 1 || qs[0].Name != "other" {
		t.Errorf("Queues listed %+v, want queue other alone", qs)
	}
}

// TestJobBriefsOneUnreadableJob: the console follows several jobs with
// one JobBriefs call; a job that cannot be read (its key holds another
// type, its partition is at a newer data model) has its own Err, and the
// others are read all the same, where one job's WRONGTYPE failed the
// whole call and a newer model was read with this release's meaning.
func TestJobBriefsOneUnreadableJob(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), map[string]int{"default": 2})
	var ids [2]string
	for i := 0; ids[0] == "" || ids[1] == ""; i++ { // one job on each partition
		id := a.enqueue(email{To: fmt.Sprint(i)}, flow.WithPartitionKey(fmt.Sprint("k", i)))
		ref, _ := keys.ParseRef(a.ns, id)
		if ids[ref.Index] == "" {
			ids[ref.Index] = id
		}
	}
	rdb := a.st.Client()
	p0 := keys.Partition{NS: a.ns, Queue: "default", Index: 0}
	testkit.Must(t, rdb.Set(a.ctx, p0.Job("bad"), "not a hash", 0).Err())
	bad := keys.Ref{Partition: p0, Local: "bad"}.String()
	p1 := keys.Partition{NS: a.ns, Queue: "default", Index: 1}
	testkit.Must(t, rdb.Set(a.ctx, p1.DataModel(), store.DataModel+1, 0).Err())

	bs, err := a.ops.JobBriefs(a.ctx, []string{ids[0], bad, ids[1]})
	if err != nil {
		t.Fatalf("JobBriefs with one job of another type and one at a newer model: %v, want each its own error", err)
	}
	if b := bs[ids[0]]; b.State != flow.StateAvailable || b.Err != nil {
		t.Errorf("brief of the readable job: %+v", b)
	}
	if b := bs[bad]; !errors.Is(b.Err, flow.ErrMalformed) || b.State != "" {
		t.Errorf("brief of a job key of another type: %+v, want ErrMalformed", b)
	}
	if b := bs[ids[1]]; !errors.Is(b.Err, flow.ErrNewerDataModel) || b.State != "" {
		t.Errorf("brief of a job at a newer data model: %+v, want ErrNewerDataModel", b)
	}
}

// TestJobExtrasOfAnotherType: JobExtras of a job whose key, or whose
// record of finished children, holds another type is ErrMalformed
// (docs/errors.md), not Redis's bare WRONGTYPE.
func TestJobExtrasOfAnotherType(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	id := a.enqueue(email{To: "ann"})
	ref, _ := keys.ParseRef(a.ns, id)
	rdb := a.st.Client()
	testkit.Must(t, rdb.Set(a.ctx, ref.Kids(ref.Local), "not a hash", 0).Err())
	if _, err := a.ops.JobExtras(a.ctx, id); !errors.Is(err, flow.ErrMalformed) {
		t.Errorf("JobExtras of a children record of another type: %v, want ErrMalformed", err)
	}
	testkit.Must(t, rdb.Del(a.ctx, ref.Job(ref.Local)).Err())
	testkit.Must(t, rdb.Set(a.ctx, ref.Job(ref.Local), "not a hash", 0).Err())
	if _, err := a.ops.JobExtras(a.ctx, id); !errors.Is(err, flow.ErrMalformed) {
		t.Errorf("JobExtras of a job key of another type: %v, want ErrMalformed", err)
	}
}

func adminList(queue, state string) admin.ListOptions {
	return admin.ListOptions{Queue: queue, State: state}
}
