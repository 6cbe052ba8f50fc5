package flow

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/internal/mpack"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/internal/store"
)

// WaitPoll is how often a Client whose Wait calls are in progress reads
// the state of the jobs they wait for, in one round trip for all of
// them: the fallback that finds a job whose announcement was lost. Wait
// learns of a finished job from the job's partition's pub/sub channel
// (within a millisecond); an announcement is lost only while the
// subscriber's connection is down (go-redis then reconnects and
// subscribes again, and Wait reads the state of every job again at once)
// or was silently cut (found by a ping that goes unanswered for a
// WaitPoll).
const WaitPoll = time.Second

// WatchKeep is how long, at least, a job that a Wait call watched is kept
// once it finishes, whatever its retention: a worker that deletes
// completed jobs at once (runtime.Options.DiscardCompleted) keeps a
// watched one this long, so that its waiters can read it.
const WatchKeep = store.WatchKeep

// Wait returns the job id once it has finished (completed, archived,
// quarantined or cancelled): its JobInfo, read when it finished, with its
// result (see Result), or its reason and last error. It returns at once
// for a job that has finished already.
//
// It costs nothing to jobs that nobody waits on. Wait subscribes to the
// pub/sub channel of the job's partition, then marks the job as watched
// (one script, which also answers its state), and finishing a watched
// job announces it there. The subscriber is shared: all the Wait calls
// of a Client use one connection (opened by the first, closed when the
// last returns) and one subscription per partition. No finish is
// missed: a lost announcement is found by reading the job's state again
// when the subscriber reconnects, and every WaitPoll.
//
// A finished job is kept for its retention (runtime.Options
// RetainCompleted, RetainArchived, RetainCancelled, which an operator's
// cancel follows too), and a
// job Wait watched for WatchKeep at least, also where completed jobs are
// discarded at once; a job deleted before Wait reads it is ErrNotFound
// (so is one that was discarded before the Wait call).
//
// Errors: ErrInvalid for a malformed ID, ErrNotFound when there is no
// such job (also when an operator deletes it during the wait, and when
// a new job was given its ID since: the job Wait found first is the one
// it waits for, told apart by its creation time),
// ErrMalformed when the job's data cannot be read (its key holds another
// type than a hash, say), ErrNewerDataModel when its partition is at a
// newer data model than this release knows (these three at once: no
// retry changes them), an error wrapping redis.ErrClosed once the Redis
// client is closed, ctx's error when ctx ends first. While Redis cannot
// be reached, Wait keeps trying until ctx ends.
func (c *Client) Wait(ctx context.Context, id string) (*JobInfo, error) {
	ref, ok := keys.ParseRef(c.opts.Namespace, id)
	if !ok {
		return nil, fmt.Errorf("%w: job ID %s is not of the form queue:partition:id", ErrInvalid, names.Quote(id))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := c.waits.add(c.st, ref)
	defer c.waits.remove(w)
	var retry *time.Timer // set while a failed call waits to be tried again
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	mark, read := true, false
	// born is the creation time (ms) of the job the first watch found, 0
	// when it has no created field (a generated ID, never given to
	// another job): a job read later with another one is a new job given
	// the ID once the one waited for was deleted (its announcement lost,
	// or the ID taken again before this read), and the wait is over
	var born int64
	for {
		failed := false
		if mark {
			// Subscribed (add) before the job is marked: a finish after
			// the mark is announced to this subscription, or found by the
			// check the subscription's confirmation starts (hub.loop).
			state, created, err := c.st.Watch(ctx, ref)
			switch {
			case err == nil && born != 0 && created != born:
				return nil, fmt.Errorf("%w: job %s was deleted during the wait (another job has its ID now)", ErrNotFound, id)
			case err == nil:
				if born == 0 {
					born = created
					w.born.Store(born) // for the poll (hub.check)
				}
				mark, read = false, terminal(state)
			case c.refused(ctx, err):
				return nil, err
			case ctx.Err() != nil:
				return nil, ctx.Err()
			default:
				failed = true
			}
		}
		if read {
			info, err := c.Job(ctx, id)
			switch {
			case err == nil && born != 0 && info.Created.UnixMilli() != born:
				return nil, fmt.Errorf("%w: job %s was deleted during the wait (another job has its ID now)", ErrNotFound, id)
			case err == nil && terminal(info.State):
				return info, nil
			case err == nil:
				// It left its final state again (redriven): watch it again.
				mark = true
				continue
			case c.refused(ctx, err):
				return nil, err
			case ctx.Err() != nil:
				return nil, ctx.Err()
			default:
				failed = true
			}
		}
		var again <-chan time.Time
		if failed {
			if retry == nil {
				retry = time.NewTimer(c.waits.interval())
			} else {
				retry.Reset(c.waits.interval())
			}
			again = retry.C
		}
		select {
		case <-w.wake:
			read = true
		case <-again:
			read = !mark
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// refused reports whether err is an answer that no retry changes, which
// Wait returns at once: there is no such job, its data cannot be read
// (ErrMalformed: a key of another type, say), its partition is at a newer
// data model than this release knows (ErrNewerDataModel: only upgrading
// the process changes that), or the Redis client was closed
// (redis.ErrClosed: it never answers again). Any other error is taken
// for Redis being out of reach, and retried.
func (c *Client) refused(ctx context.Context, err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrMalformed) || errors.Is(err, ErrNewerDataModel) ||
		c.clientClosed(ctx, err)
}

// clientClosed tells whether err means the Redis client is closed, for
// good. A cluster client also fails a command on one of its node clients
// that was closed under it (the node left the cluster); a PING, which any
// node answers, tells the two apart (as runtime's fetch loop does).
func (c *Client) clientClosed(ctx context.Context, err error) bool {
	return errors.Is(err, redis.ErrClosed) && errors.Is(c.st.Client().Ping(ctx).Err(), redis.ErrClosed)
}

// terminal reports whether state is a final one.
func terminal(state string) bool {
	switch state {
	case StateCompleted, StateArchived, StateQuarantined, StateCancelled:
		return true
	}
	return false
}

// NotCompletedError is Result's error for a job that finished in another
// state than completed: archived, quarantined or cancelled.
type NotCompletedError struct {
	ID        string
	State     string // archived, quarantined or cancelled
	Reason    string // why: attempts_exhausted, crash_limit, operator, ...
	LastError string // its last error, if it had one
	Job       *JobInfo
}

func (e *NotCompletedError) Error() string {
	msg := fmt.Sprintf("sluice: job %s %s", e.ID, e.State)
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	if e.LastError != "" {
		msg += ": " + e.LastError
	}
	return msg
}

// Result waits for the job id to finish (Client.Wait) and decodes its
// result, which a handler registered with RegisterResult returned, into
// an R (R's zero value for a job that completed without a result). A
// result that does not decode into an R is ErrResultType. A job that
// finished otherwise is a *NotCompletedError with its state and reason;
// Wait's errors are returned as they are.
func Result[R any](ctx context.Context, c *Client, id string) (R, error) {
	var r R
	info, err := c.Wait(ctx, id)
	if err != nil {
		return r, err
	}
	if info.State != StateCompleted {
		return r, &NotCompletedError{ID: id, State: info.State, Reason: info.Reason, LastError: info.LastError, Job: info}
	}
	if len(info.Result) > 0 {
		if err := mpack.Unmarshal(info.Result, &r); err != nil {
			return r, fmt.Errorf("%w: job %s, as %T: %w", ErrResultType, id, r, err)
		}
	}
	return r, nil
}

// Call runs a child job as the durable step name, in a handler, and
// returns its result: Spawn of one item then Join. While the child has
// not finished, Call returns a *sluicetype.WaitingError, which the handler must
// return (as with Join): the job is suspended, holding no worker and
// spending no attempt, and runs again, its finished steps skipped, once
// the child is done; that run's Call returns the child's result without
// spawning it again. A child that did not complete is a
// *ChildFailedError (its ID, state and last error), wrapped with the
// step's name; returning it fails the attempt, and the next one sees the
// same child, so handle it rather than retry.
func Call[R any](ctx context.Context, name string, args Args, opts ...EnqueueOption) (R, error) {
	var zero R
	ch, err := Spawn(ctx, name, Item{Args: args, Opts: opts})
	if err != nil {
		return zero, err
	}
	res, err := Join[R](ctx, ch, FailFast)
	if err != nil {
		if cf := (*ChildFailedError)(nil); errors.As(err, &cf) {
			return zero, fmt.Errorf("call %q: %w", name, err)
		}
		return zero, err
	}
	return res[0].Result, nil
}

// waitHub is the subscriber that a Client's Wait calls share: one
// session (a pub/sub connection and its goroutine) while any Wait is in
// progress, with one subscription per partition channel however many
// wait on it, and each announcement handed to the waiters of its job.
type waitHub struct {
	mu   sync.Mutex
	poll time.Duration // 0: WaitPoll (tests set it)
	sess *waitSession
}

// waitSession is the subscriber while Wait calls are in progress; a new
// one starts when a Wait begins after the last one returned.
type waitSession struct {
	st      *store.Store
	ps      *redis.PubSub
	poll    time.Duration
	ctx     context.Context // ends with the session
	cancel  context.CancelFunc
	done    chan struct{} // closed when its loop has returned
	chans   map[string]int
	waiters map[waitKey]map[*waiter]bool
	n       int
	ops     subOps // its SUBSCRIBE, UNSUBSCRIBE and Close, in order
}

// waitKey names a job by its partition's channel and its ID in the
// partition, as announcements do.
type waitKey struct{ channel, local string }

// waiter is one Wait call.
type waiter struct {
	key  waitKey
	ref  keys.Ref
	s    *waitSession
	wake chan struct{} // a value: look at the job again
	// born is the creation time of the job it waits for, once its watch
	// read one (0: not yet, or none): a job of the ID created at another
	// time is a new one, which wakes the waiter (its ErrNotFound) though
	// it has not finished
	born atomic.Int64
}

// interval is the poll interval.
func (h *waitHub) interval() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.poll > 0 {
		return h.poll
	}
	return WaitPoll
}

// setPoll sets the poll interval of sessions started from now on (tests).
func (h *waitHub) setPoll(d time.Duration) {
	h.mu.Lock()
	h.poll = d
	h.mu.Unlock()
}

// add registers a waiter for the job ref, subscribing to its partition's
// channel if no waiter is, and starting a session if none runs.
func (h *waitHub) add(st *store.Store, ref keys.Ref) *waiter {
	key := waitKey{ref.DoneChannel(), ref.Local}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sess
	if s == nil {
		poll := h.poll
		if poll <= 0 {
			poll = WaitPoll
		}
		ctx, cancel := context.WithCancel(context.Background())
		s = &waitSession{
			st: st, ps: st.Client().Subscribe(ctx), poll: poll, ctx: ctx, cancel: cancel,
			done: make(chan struct{}), chans: map[string]int{}, waiters: map[waitKey]map[*waiter]bool{},
			ops: newSubOps(),
		}
		h.sess = s
		go h.loop(s)
		go s.ops.run()
	}
	w := &waiter{key: key, ref: ref, s: s, wake: make(chan struct{}, 1)}
	if s.waiters[key] == nil {
		s.waiters[key] = map[*waiter]bool{}
	}
	s.waiters[key][w] = true
	s.n++
	s.chans[key.channel]++
	if s.chans[key.channel] == 1 {
		// On an error go-redis keeps the channel, and subscribes with its
		// next connection, which the loop's next receive opens; the
		// confirmation makes the loop check the waiters (a job that
		// finished before it is found so).
		s.ops.queue(func() bool {
			_ = s.ps.Subscribe(s.ctx, key.channel)
			return false
		})
	}
	return w
}

// remove ends waiter w: the last of its channel unsubscribes, the last of
// the session ends it.
func (h *waitHub) remove(w *waiter) {
	s := w.s
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(s.waiters[w.key], w)
	if len(s.waiters[w.key]) == 0 {
		delete(s.waiters, w.key)
	}
	s.n--
	s.chans[w.key.channel]--
	last := s.chans[w.key.channel] == 0
	if last {
		delete(s.chans, w.key.channel)
	}
	end := s.n == 0
	if end && h.sess == s {
		h.sess = nil
	}
	switch {
	case end:
		s.cancel()
		s.ops.queue(func() bool {
			_ = s.ps.Close() // ends the loop's receive
			return true
		})
	case last:
		s.ops.queue(func() bool {
			_ = s.ps.Unsubscribe(s.ctx, w.key.channel)
			return false
		})
	}
}

// loop receives the session's messages until it ends: it hands each
// announcement to its job's waiters, checks the jobs of a channel whenever
// a subscription to it is confirmed (the first time, and again after
// every reconnection: announcements in between are lost), and checks all
// jobs every poll interval. A poll interval with nothing received sends a
// ping; when the next one passes without an answer, the connection is
// taken for dead, and go-redis reconnects.
func (h *waitHub) loop(s *waitSession) {
	defer close(s.done)
	next := time.Now().Add(s.poll)
	var (
		backoff  time.Duration
		received bool // something arrived since the last poll
		pinged   bool // a ping is unanswered
	)
	for s.ctx.Err() == nil {
		wait := time.Until(next)
		if wait <= 0 {
			if !received && !pinged {
				pinged = s.ps.Ping(s.ctx) == nil
			}
			received = false
			next = time.Now().Add(s.poll)
			if !h.check(s, "") {
				next = time.Now().Add(min(s.poll, time.Second)) // try again soon
			}
			continue
		}
		var (
			msg any
			err error
		)
		if pinged {
			// A timeout of this receive is a dead connection to go-redis.
			ctx, cancel := context.WithDeadline(s.ctx, next)
			msg, err = s.ps.Receive(ctx)
			cancel()
		} else {
			msg, err = s.ps.ReceiveTimeout(s.ctx, wait) // > 0: no timeout would block
		}
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() && !pinged {
				continue
			}
			pinged = false
			h.wakeIfClosed(s, err)
			// The connection failed: the next receive reconnects and
			// subscribes again. Back off while that fails too.
			if !h.pause(s, backoff) {
				return
			}
			backoff = min(max(2*backoff, 10*time.Millisecond), time.Second, s.poll)
			continue
		}
		backoff, received, pinged = 0, true, false
		switch m := msg.(type) {
		case *redis.Message:
			if _, local, ok := strings.Cut(m.Payload, " "); ok {
				h.mu.Lock()
				s.wakeKey(waitKey{m.Channel, local})
				h.mu.Unlock()
			}
		case *redis.Subscription:
			if m.Kind == "subscribe" && !h.check(s, m.Channel) {
				if soon := time.Now().Add(min(s.poll, time.Second)); soon.Before(next) {
					next = soon // check them all soon
				}
			}
		}
	}
}

// pause waits d, and reports false if the session ended first.
func (h *waitHub) pause(s *waitSession, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// check reads the state of the jobs waited on in channel, or of all when
// channel is "", in one round trip, and wakes the waiters of those that
// finished or are gone. It reports false when the read failed.
// wakeIfClosed wakes every waiter of s when err says the Redis client
// was closed under the session (the caller's to close): no announcement
// comes any more and no poll reads, so each waiter looks at its job and
// returns the error (refused). A PubSub's own connection may outlive the
// client's Close, or fail with its connection's error first, so the
// session's receive and its poll both ask.
func (h *waitHub) wakeIfClosed(s *waitSession, err error) {
	if !errors.Is(err, redis.ErrClosed) && !errors.Is(s.st.Client().Ping(s.ctx).Err(), redis.ErrClosed) {
		return
	}
	h.mu.Lock()
	for k := range s.waiters {
		s.wakeKey(k)
	}
	h.mu.Unlock()
}

func (h *waitHub) check(s *waitSession, channel string) bool {
	h.mu.Lock()
	var (
		refs []keys.Ref
		ks   []waitKey
	)
	for k, ws := range s.waiters {
		if channel != "" && k.channel != channel {
			continue
		}
		for w := range ws {
			refs = append(refs, w.ref)
			ks = append(ks, k)
			break
		}
	}
	h.mu.Unlock()
	// a job of another creation time than a waiter's is not its job (see
	// waiter.born): it is woken as for a job that is gone
	if len(refs) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(s.ctx, max(s.poll, 5*time.Second))
	states, created, err := s.st.States(ctx, refs)
	cancel()
	if err != nil {
		h.wakeIfClosed(s, err)
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, k := range ks {
		if states[i] == "" || terminal(states[i]) {
			s.wakeKey(k)
			continue
		}
		for w := range s.waiters[k] {
			if b := w.born.Load(); b != 0 && b != created[i] {
				select {
				case w.wake <- struct{}{}:
				default:
				}
			}
		}
	}
	return true
}

// wakeKey wakes the waiters of the job k; the caller holds the hub's mu.
func (s *waitSession) wakeKey(k waitKey) {
	for w := range s.waiters[k] {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}
