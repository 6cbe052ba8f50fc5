package flow

import "sync"

// subOps runs a Wait session's SUBSCRIBE, UNSUBSCRIBE and Close calls on
// a goroutine of their own, in the order they were queued (under the
// hub's lock, as their decisions were made), so that no Wait blocks on
// one: go-redis holds a PubSub's lock while its receive (re)connects,
// for up to a read timeout when Redis accepts connections but does not
// answer, and a Wait whose context ended must return then, not after.
// A subscription that comes late loses nothing: its confirmation makes
// the session check its jobs (waitHub.loop).
type subOps struct {
	mu   sync.Mutex
	q    []func() bool // true: the last (Close)
	kick chan struct{} // one value: the queue may hold calls
}

func newSubOps() subOps { return subOps{kick: make(chan struct{}, 1)} }

// queue adds op, which run calls after those queued before it.
func (o *subOps) queue(op func() bool) {
	o.mu.Lock()
	o.q = append(o.q, op)
	o.mu.Unlock()
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// run calls the queued operations in order until one says it is the last.
func (o *subOps) run() {
	for range o.kick {
		for {
			o.mu.Lock()
			if len(o.q) == 0 {
				o.mu.Unlock()
				break
			}
			op := o.q[0]
			o.q[0] = nil
			o.q = o.q[1:]
			o.mu.Unlock()
			if op() {
				return
			}
		}
	}
}
