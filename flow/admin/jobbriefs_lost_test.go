package admin_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
)

// cutReplies is a go-redis hook that, in a pipeline, fails the commands on
// key with a connection error after Redis answered the pipeline's first
// command: as a pipeline whose connection drops part way through its
// replies, or, on a cluster, one whose commands to one node fail (a node
// down, a timeout) while the others answer. The pipeline's error is then
// the first command's (go-redis: cmdsFirstErr), which for JobBriefs is the
// GET of an absent dm key: redis.Nil.
type cutReplies struct{ key string }

var errCut = errors.New("read tcp: connection reset by peer")

func (cutReplies) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (cutReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h cutReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		_ = next(ctx, cmds)
		for _, c := range cmds {
			if a := c.Args(); len(a) > 1 && fmt.Sprint(a[1]) == h.key {
				c.SetErr(errCut)
			}
		}
		for _, c := range cmds {
			if err := c.Err(); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestJobBriefsLostConnectionFailsTheCall: JobBriefs is documented
// to fail as a whole on "an error of reaching Redis", a job's own Err
// being only why that job cannot be read (ErrNewerDataModel,
// ErrMalformed). A connection error on one job's read (a cluster node
// out of reach) is instead handed back as that job's JobBrief.Err, with
// a nil error: the console shows the job as unreadable with a network
// error as its reason (sent once, as if permanent) and never reports the
// failed read (hub onError).
func TestJobBriefsLostConnectionFailsTheCall(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	a := newAdmin(t, rdb, nil)
	ok := a.enqueue(email{To: "ann"})
	cut := a.enqueue(email{To: "bob"})
	ref, _ := keys.ParseRef(a.ns, cut)
	rdb.AddHook(cutReplies{key: ref.Job(ref.Local)})

	briefs, err := a.ops.JobBriefs(a.ctx, []string{ok, cut})
	if err == nil {
		b := briefs[cut]
		t.Fatalf("JobBriefs with job %s's read cut off: nil error, its brief %+v (Err %v; ErrMalformed %v, ErrNewerDataModel %v); "+
			"want the call's error (an error of reaching Redis fails the call)", cut, b, b.Err,
			errors.Is(b.Err, flow.ErrMalformed), errors.Is(b.Err, flow.ErrNewerDataModel))
	}
}
