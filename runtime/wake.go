package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
)

// wakeups delivers the pub/sub messages that say a partition has work.
//
// On Redis Cluster the worker subscribes on every node (masters and
// replicas), not on one. A node hands a message published by a script on
// it to its own subscribers at once, but relays it to the other nodes over
// the cluster bus, where under a steady trickle of messages it often
// waits for the previous segment's delayed acknowledgement: measured here,
// pickup p90 35 ms with one subscription, 1.2 ms with one per node. Each
// wake-up then arrives several times (a ready partition stays ready). A
// replica's subscription is already there when failover promotes it. The
// set of nodes is checked every nodeRefresh: nodes that joined get a
// subscription, and nodes gone from the cluster (a dead master replaced by
// its replica) lose theirs, instead of being redialled for ever.
type wakeups struct {
	chans []string
	// ch carries *redis.Message wake-ups and, after go-redis reconnected
	// a subscription (e.g. its node failed over), *redis.Subscription
	// confirmations: wake-ups published in the gap are lost. go-redis
	// closes it when the client is closed under the worker (merged is
	// never closed: its forwarders just end).
	ch     <-chan any
	merged chan any // ch, when there are several subscriptions
	// push is the worker's own channel, on which enqueues push it jobs
	// it offered to take (push.go); "" on a cluster, where it makes no
	// offers.
	push string
	done chan struct{}
	fwd  sync.WaitGroup
	mu   sync.Mutex
	subs map[string]*redis.PubSub // by node address ("" for a single client)
	// index finds a partition's position in Worker.parts by queue channel
	// and partition number.
	index map[string]map[int]int
}

// nodeRefresh is how often a cluster worker matches its wake-up
// subscriptions to the cluster's nodes.
const nodeRefresh = 5 * time.Second

// shardedClient is a cluster client that can reach each of its nodes
// (*redis.ClusterClient, or a wrapper that passes ForEachShard on).
type shardedClient interface {
	ForEachShard(ctx context.Context, fn func(ctx context.Context, node *redis.Client) error) error
}

// subscribe listens on the wake channels of every served queue. It returns
// only once every subscription is confirmed, so no wake-up published after
// the first claim can be missed.
func (w *Worker) subscribe(ctx context.Context) (*wakeups, error) {
	wk := &wakeups{index: map[string]map[int]int{}, done: make(chan struct{}), subs: map[string]*redis.PubSub{}}
	for i, p := range w.parts {
		c := keys.WakeChannel(p.NS, p.Queue)
		if wk.index[c] == nil {
			wk.index[c] = map[int]int{}
			wk.chans = append(wk.chans, c)
		}
		wk.index[c][p.Index] = i
	}
	sc, isCluster := w.st.Client().(shardedClient)
	if !isCluster {
		// random: a channel two workers shared would run a pushed job twice
		wk.push = keys.PushChannel(w.opts.Namespace, randomHex(16))
		wk.chans = append(wk.chans, wk.push)
		ps := w.st.Client().Subscribe(ctx, wk.chans...)
		if err := wk.confirm(ctx, ps); err != nil {
			return nil, err
		}
		wk.subs[""] = ps
		wk.ch = ps.ChannelWithSubscriptions(redis.WithChannelSize(1024))
		return wk, nil
	}
	wk.merged = make(chan any, 1024)
	wk.ch = wk.merged
	if err := wk.sync(ctx, sc, w.log); err != nil {
		wk.close()
		return nil, err
	}
	wk.fwd.Go(func() { wk.follow(sc, w) })
	return wk, nil
}

// nodeTimeout bounds the subscription on one node, so that a node that
// does not answer cannot hold up the others.
const nodeTimeout = 2 * time.Second

// confirmTimeout bounds the wait for a single server's confirmation of
// the wake-up subscription at start.
const confirmTimeout = 10 * time.Second

// confirm waits for ps's subscription to every channel: until ctx ends,
// or for confirmTimeout, for a connection that stays open and silent
// (go-redis's read has no deadline of its own there, and a cancel does
// not interrupt it: ps is closed then, which does).
func (wk *wakeups) confirm(ctx context.Context, ps *redis.PubSub) error {
	cctx, cancel := context.WithTimeout(ctx, confirmTimeout)
	defer cancel()
	stop := context.AfterFunc(cctx, func() { _ = ps.Close() })
	for range wk.chans {
		if _, err := ps.Receive(cctx); err != nil {
			_ = ps.Close()
			if ctx.Err() == nil && cctx.Err() != nil {
				return fmt.Errorf("sluice: subscribing to wake-ups: no confirmation from Redis in %v: %w", confirmTimeout, err)
			}
			return err
		}
	}
	if !stop() { // closed as ctx ended or the time ran out
		if err := ctx.Err(); err != nil {
			return err
		}
		return fmt.Errorf("sluice: subscribing to wake-ups: no confirmation from Redis in %v", confirmTimeout)
	}
	return nil
}

// sync subscribes on the cluster's nodes that have no subscription yet and
// drops the subscriptions of nodes no longer in it. A node that cannot be
// subscribed on is logged and tried again at the next sync; sync fails
// only when no node at all has a subscription (one is enough to hear
// every wake-up, through the cluster bus).
func (wk *wakeups) sync(ctx context.Context, sc shardedClient, log *slog.Logger) error {
	var mu sync.Mutex
	current := map[string]*redis.Client{}
	err := sc.ForEachShard(ctx, func(_ context.Context, node *redis.Client) error {
		mu.Lock()
		current[node.Options().Addr] = node
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	// Only subscribe (at start) and follow (after) call sync, one at a
	// time; the lock guards wk.subs against close, and is not held across
	// the network calls.
	wk.mu.Lock()
	for addr, ps := range wk.subs {
		if current[addr] == nil {
			_ = ps.Close() // its forwarder ends with its channel
			delete(wk.subs, addr)
		}
	}
	missing := map[string]*redis.Client{}
	for addr, node := range current {
		if wk.subs[addr] == nil {
			missing[addr] = node
		}
	}
	wk.mu.Unlock()
	var (
		failed error
		added  = map[string]*redis.PubSub{}
		amu    sync.Mutex
		all    sync.WaitGroup
	)
	for addr, node := range missing { // at once: a dead node delays none of the others
		all.Go(func() {
			nctx, cancel := context.WithTimeout(ctx, nodeTimeout)
			defer cancel()
			ps := node.Subscribe(nctx, wk.chans...)
			err := wk.confirm(nctx, ps)
			amu.Lock()
			defer amu.Unlock()
			if err != nil {
				log.Warn("cannot subscribe to wake-ups on a cluster node; trying again later", "node", addr, "err", err)
				failed = err
				return
			}
			added[addr] = ps
		})
	}
	all.Wait()
	wk.mu.Lock()
	defer wk.mu.Unlock()
	select {
	case <-wk.done: // closed meanwhile: keep nothing
		for _, ps := range added {
			_ = ps.Close()
		}
		return nil
	default:
	}
	for addr, ps := range added {
		wk.subs[addr] = ps
		in := ps.ChannelWithSubscriptions(redis.WithChannelSize(1024))
		wk.fwd.Go(func() {
			for m := range in {
				select {
				case wk.merged <- m:
				case <-wk.done:
					return
				}
			}
		})
	}
	if len(wk.subs) == 0 {
		return fmt.Errorf("sluice: no cluster node accepted the wake-up subscription: %w", failed)
	}
	return nil
}

// follow re-syncs the subscriptions every nodeRefresh until close.
func (wk *wakeups) follow(sc shardedClient, w *Worker) {
	for {
		t := w.clk.NewTimer(nodeRefresh)
		select {
		case <-wk.done:
			t.Stop()
			return
		case <-t.C():
		}
		ctx, cancel := context.WithTimeout(context.Background(), nodeRefresh)
		if err := wk.sync(ctx, sc, w.log); err != nil {
			w.log.Warn("matching wake-up subscriptions to the cluster's nodes failed", "err", err)
		}
		cancel()
	}
}

// wakeAll is what partition answers for a resubscription: any partition
// may have been sent a wake-up that was lost.
const wakeAll = -2

// pushed is what partition answers for a message on the worker's own
// channel: jobs pushed to it.
const pushed = -3

// partition maps a message to a partition position, wakeAll after a
// reconnection, pushed, or -1.
func (wk *wakeups) partition(msg any) int {
	m, ok := msg.(*redis.Message)
	if !ok {
		return wakeAll
	}
	if wk.push != "" && m.Channel == wk.push {
		return pushed
	}
	idx, err := strconv.Atoi(m.Payload)
	if err != nil {
		return -1
	}
	if i, ok := wk.index[m.Channel][idx]; ok {
		return i
	}
	return -1
}

// withdraw ends the worker's offers: it unsubscribes from its own
// channel, after which an enqueue finds nobody there and lists the job,
// and passes take each push that came before, until Redis confirms (or
// ctx ends first; the reaper then takes any lease left).
func (wk *wakeups) withdraw(ctx context.Context, log *slog.Logger, take func(*redis.Message)) {
	if wk.push == "" || wk.ch == nil { // a cluster worker makes no offers
		return
	}
	wk.mu.Lock() // follow's sync may be changing subs on a cluster
	ps := wk.subs[""]
	wk.mu.Unlock()
	if ps == nil {
		return
	}
	if err := ps.Unsubscribe(ctx, wk.push); err != nil {
		// the connection is broken: what it held on the wire is lost with
		// it, and the reaper takes those leases back; what it had received
		// is in wk.ch already, and handed back
		log.Warn("could not withdraw the worker's offers; jobs pushed meanwhile wait out their leases", "err", err)
		wk.takeReceived(take)
		return
	}
	for {
		select {
		case <-ctx.Done():
			wk.takeReceived(take)
			return
		case m, open := <-wk.ch:
			if !open {
				return
			}
			switch m := m.(type) {
			case *redis.Message:
				if m.Channel == wk.push {
					take(m)
				}
			case *redis.Subscription:
				if m.Kind == "unsubscribe" && m.Channel == wk.push {
					return
				}
			}
		}
	}
}

// takeReceived passes take each push already received, without waiting
// for more: left in the channel, their jobs would stay leased to a worker
// that has stopped until reaped, each charged a crash.
func (wk *wakeups) takeReceived(take func(*redis.Message)) {
	for {
		select {
		case m, open := <-wk.ch:
			if !open {
				return
			}
			if m, ok := m.(*redis.Message); ok && m.Channel == wk.push {
				take(m)
			}
		default:
			return
		}
	}
}

func (wk *wakeups) close() {
	close(wk.done)
	wk.mu.Lock()
	for _, ps := range wk.subs {
		_ = ps.Close()
	}
	wk.subs = map[string]*redis.PubSub{}
	wk.mu.Unlock()
	wk.fwd.Wait()
}
