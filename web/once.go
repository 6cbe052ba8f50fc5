package web

import (
	"cmp"
	"errors"
	"sync"
	"time"
)

// onceKeep is how long the console remembers what a bulk action's
// confirmation did, and onceMax how many it remembers at most.
const (
	onceKeep = time.Hour
	onceMax  = 1000
)

// onceRun is one run of a bulk action's confirmation (its key: the form's
// "once" field, fresh for every confirmation page): done is closed when
// it ended, with what it said.
type onceRun struct {
	done      chan struct{}
	at        time.Time
	msg, back string
	err       error
}

// onceRuns are the runs of bulk actions' confirmations this console
// made: the form posted twice (a double click, a re-sent request) waits
// for the first post's run and says what it did, instead of running the
// selector again over what the first left (a bulk delete "deleted 0").
type onceRuns struct {
	mu   sync.Mutex
	runs map[string]*onceRun
}

// do runs run once for key: the first call runs it and keeps what it
// said (an error is not kept: a retry runs again); a call while it runs,
// or after, waits for it and answers what it said, with again true.
func (o *onceRuns) do(key string, run func() (msg, back string, err error)) (msg, back string, again bool, err error) {
	o.mu.Lock()
	if r, ok := o.runs[key]; ok {
		o.mu.Unlock()
		<-r.done
		if r.err == nil {
			return r.msg, r.back, true, nil
		}
		return o.do(key, run) // the first failed: this one runs
	}
	now := time.Now()
	for k, r := range o.runs {
		select {
		case <-r.done:
			if now.Sub(r.at) > onceKeep || len(o.runs) >= onceMax {
				delete(o.runs, k)
			}
		default:
		}
	}
	if o.runs == nil {
		o.runs = map[string]*onceRun{}
	}
	r := &onceRun{done: make(chan struct{}), at: now}
	o.runs[key] = r
	o.mu.Unlock()
	ran := false
	defer func() {
		if !ran || r.err != nil {
			// failed, or panicked (net/http recovers it): not kept, so a
			// post waiting, or a retry, runs again
			r.err = cmp.Or(r.err, errOnceFailed)
			o.mu.Lock()
			delete(o.runs, key)
			o.mu.Unlock()
		}
		close(r.done)
	}()
	r.msg, r.back, r.err = run()
	ran = true
	return r.msg, r.back, false, r.err
}

// errOnceFailed stands for a run that panicked.
var errOnceFailed = errors.New("sluice web: the action's run failed")
