package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/sluicetype"
)

// Errors the store reports. Script status codes are mapped to these in
// status.go and nowhere else.
var (
	// ErrStale: the attempt's identity (lease ID, fence) is no longer current;
	// nothing was written.
	ErrStale = sluicetype.ErrStale
	// ErrConflict: a job with the caller's ID exists with other content.
	ErrConflict = sluicetype.ErrConflict
	// ErrNotFound: no job has this ID (never enqueued, or deleted after its
	// retention).
	ErrNotFound = sluicetype.ErrNotFound
	// ErrMalformed: data read from Redis is not a valid job.
	ErrMalformed = sluicetype.ErrMalformed
	// ErrRetired: an enqueue reached a partition that went away when its
	// queue shrank (Retire): nothing was added. The caller's layout of the
	// queue is out of date; it is sluicetype.ErrLayoutMismatch to
	// errors.Is, wherever it surfaces (a spawn, a relayed follow-up).
	// SetPaused answers it for a retired partition, which it leaves so.
	ErrRetired = fmt.Errorf("%w: the partition went away in a resize of its queue", sluicetype.ErrLayoutMismatch)
	// ErrNewerDataModel: a newer release changed what the partition's keys
	// mean (DataModel); the script refused the partition and wrote nothing.
	ErrNewerDataModel = sluicetype.ErrNewerDataModel
	// ErrTimeOutOfRange: a job's run time or deadline is outside
	// [MinTime, MaxTime]; the job was not sent (flow refuses such times
	// first, as ErrInvalid; a follow-up read from an outbox entry is
	// checked here).
	ErrTimeOutOfRange = errors.New("sluice: a job's time is out of range")
	// ErrDeadlineNotAfterDue: a job's deadline is at or before the time
	// its delay makes it due (counted from the store's clock, so only the
	// enqueue script can tell): it could never run. Nothing was written
	// for it; the call's other jobs are added (flow: ErrInvalid).
	ErrDeadlineNotAfterDue = errors.New("sluice: the job's deadline is not after its due time")
	// ErrResizeUnlocked: a resize's token no longer held its queue's
	// resize lock when it came to record the layout (the lock expired, or
	// a resume took it); nothing was recorded.
	ErrResizeUnlocked = errors.New("sluice: the resize no longer holds the queue's resize lock")
)

// DataModel is the partition data model this release's scripts know (the
// meaning of a partition's keys; lua/lib.lua model_error). A release that
// changes it raises keys.Partition.DataModel on each partition once no
// process of an older release runs there; from then on the scripts of an
// older release refuse the partition (ErrNewerDataModel) instead of
// misreading it. Workers register the model they know (Heartbeat).
const DataModel = 1

// newerModel is how a script words its refusal of a newer data model,
// and malformedKey its refusal of a key of another type, which it names
// (a data model key: lua/lib.lua model_error; a paused flag: enqueue.lua).
const (
	newerModel   = "sluice: newer data model"
	malformedKey = "sluice: malformed key: "
)

// scriptError types what a script's error, err, means to Sluice: a
// refusal of a newer data model matches ErrNewerDataModel, keeping its
// text (which names the partition and its model), and one of a key of
// another type ErrMalformed, naming the key; Redis's WRONGTYPE (a
// key the script read holds another type than Sluice writes there, a job
// key overwritten by hand, say: the script raised before it wrote
// anything) matches ErrMalformed. Other errors are returned as they are.
func scriptError(err error) error {
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), newerModel):
		return fmt.Errorf("%w: %s", ErrNewerDataModel, err.Error())
	case strings.Contains(err.Error(), malformedKey):
		return fmt.Errorf("%w: %s", ErrMalformed, err.Error())
	case strings.Contains(err.Error(), "WRONGTYPE"):
		return fmt.Errorf("%w: a key holds another type than Sluice wrote: %s", ErrMalformed, err.Error())
	}
	return err
}
