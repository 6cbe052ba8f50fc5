package web

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/sluicetype"
)

// ops are the operator calls the console makes; adminOps makes them with
// an *admin.Client, tests may substitute their own.
type ops interface {
	Namespace() string
	StoreTime(ctx context.Context) (time.Time, error)
	QueuesLive(ctx context.Context, queues map[string]int) ([]admin.QueueLive, error)
	QueueCount(ctx context.Context) (int, error)
	QueueHistory(ctx context.Context, queue string, partitions, minutes int) ([]admin.MinuteCount, error)
	QueueStats(ctx context.Context, queue string, window time.Duration) (admin.QueueStats, error)
	ListJobs(ctx context.Context, o admin.ListOptions) (admin.JobPage, error)
	Job(ctx context.Context, id string) (*flow.JobInfo, error)
	JobExtras(ctx context.Context, id string) (admin.JobExtras, error)
	JobBriefs(ctx context.Context, ids []string) (map[string]admin.JobBrief, error)
	Workers(ctx context.Context) ([]sluicetype.WorkerInfo, error)
	Schedules(ctx context.Context) ([]admin.ScheduleInfo, error)
	DeadEffects(ctx context.Context, queue string, limit int) ([]sluicetype.DeadEffect, error)
	DeadEffectCount(ctx context.Context, queue string) (int64, error)

	CancelJob(ctx context.Context, id string) (admin.Cancelled, error)
	DeleteJob(ctx context.Context, id string) error
	Redrive(ctx context.Context, ids ...string) (admin.RedriveReport, error)
	Release(ctx context.Context, ids ...string) (admin.RedriveReport, error)
	Reroute(ctx context.Context, id string, to flow.EnqueueOption) error
	PauseQueue(ctx context.Context, queue string) error
	ResumeQueue(ctx context.Context, queue string) error
	RedriveSelected(ctx context.Context, sel admin.Selector, o admin.RedriveOptions) (admin.RedriveProgress, error)
	Schedule(ctx context.Context, name string) (admin.ScheduleInfo, error)
	PauseSchedule(ctx context.Context, name string) error
	ResumeSchedule(ctx context.Context, name string) error
	TriggerSchedule(ctx context.Context, name string) (flow.Enqueued, error)
	TriggerScheduleOnce(ctx context.Context, name, key string) (flow.Enqueued, error)
	DeleteSchedule(ctx context.Context, name string, o admin.DeleteScheduleOptions) error
	RedriveEffects(ctx context.Context, ids ...string) error
	RunNow(ctx context.Context, id string) error
	// the one-job actions of the job created at or after from and
	// before before, and as shown (its fence, its redrives), checked in
	// the action's own script call
	CancelJobOf(ctx context.Context, id string, from, before time.Time, shown ...admin.Shown) (admin.Cancelled, error)
	DeleteJobOf(ctx context.Context, id string, from, before time.Time, shown ...admin.Shown) error
	RedriveOf(ctx context.Context, id string, from, before time.Time, shown ...admin.Shown) (admin.RedriveReport, error)
	ReleaseOf(ctx context.Context, id string, from, before time.Time, shown ...admin.Shown) (admin.RedriveReport, error)
	RunNowOf(ctx context.Context, id string, from, before time.Time, shown ...admin.Shown) error
	RerouteOf(ctx context.Context, id string, to flow.EnqueueOption, from, before time.Time) error
	DiscardSignalSeq(ctx context.Context, id, name string, seq int64) (flow.SignalInfo, error)
	DiscardSignalOf(ctx context.Context, id, name string, seq int64, from, before time.Time) (flow.SignalInfo, error)
	DeleteSelected(ctx context.Context, sel admin.Selector, dryRun bool) (admin.DeleteProgress, error)
}

// adminOps makes the console's calls with an *admin.Client.
type adminOps struct {
	*admin.Client
}

// Schedules lists the schedules; one whose record is corrupt is named in
// the error (store.EntryErrors) and hides none of the others.
func (a adminOps) Schedules(ctx context.Context) ([]admin.ScheduleInfo, error) {
	return a.Client.ReadableSchedules(ctx)
}

// DeleteSelected deletes the jobs sel chooses (counts them, with dryRun)
// and returns what it did: on an error, what it did before.
func (a adminOps) DeleteSelected(ctx context.Context, sel admin.Selector, dryRun bool) (admin.DeleteProgress, error) {
	return a.Client.DeleteSelected(ctx, sel, admin.DeleteOptions{DryRun: dryRun})
}
