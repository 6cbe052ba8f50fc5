package runtime

import (
	"context"
	"strconv"
	"sync"

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
// replica's subscription is already there when failover promotes it;
// nodes added after the worker started are heard through the bus.
type wakeups struct {
	subs []*redis.PubSub
	// ch carries *redis.Message wake-ups and, after go-redis reconnected
	// a subscription (e.g. its node failed over), *redis.Subscription
	// confirmations: wake-ups published in the gap are lost.
	ch   <-chan any
	done chan struct{}
	fwd  sync.WaitGroup
	// index finds a partition's position in Worker.parts by queue channel
	// and partition number.
	index map[string]map[int]int
}

// shardedClient is a cluster client that can reach each of its nodes
// (*redis.ClusterClient, or a wrapper that passes ForEachShard on).
type shardedClient interface {
	ForEachShard(ctx context.Context, fn func(ctx context.Context, node *redis.Client) error) error
}

// subscribe listens on the wake channels of every served queue. It returns
// only once every subscription is confirmed, so no wake-up published after
// the first claim can be missed.
func (w *Worker) subscribe(ctx context.Context) (*wakeups, error) {
	wk := &wakeups{index: map[string]map[int]int{}, done: make(chan struct{})}
	var chans []string
	for i, p := range w.parts {
		c := keys.WakeChannel(p.NS, p.Queue)
		if wk.index[c] == nil {
			wk.index[c] = map[int]int{}
			chans = append(chans, c)
		}
		wk.index[c][p.Index] = i
	}
	if sc, ok := w.st.Client().(shardedClient); ok {
		var mu sync.Mutex
		err := sc.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
			ps := node.Subscribe(ctx, chans...)
			mu.Lock()
			wk.subs = append(wk.subs, ps)
			mu.Unlock()
			return nil
		})
		if err != nil {
			wk.close()
			return nil, err
		}
	} else {
		wk.subs = []*redis.PubSub{w.st.Client().Subscribe(ctx, chans...)}
	}
	for _, ps := range wk.subs {
		for range chans {
			if _, err := ps.Receive(ctx); err != nil {
				wk.close()
				return nil, err
			}
		}
	}
	if len(wk.subs) == 1 {
		wk.ch = wk.subs[0].ChannelWithSubscriptions(redis.WithChannelSize(1024))
		return wk, nil
	}
	merged := make(chan any, 1024)
	wk.ch = merged
	for _, ps := range wk.subs {
		in := ps.ChannelWithSubscriptions(redis.WithChannelSize(1024))
		wk.fwd.Go(func() {
			for m := range in {
				select {
				case merged <- m:
				case <-wk.done:
					return
				}
			}
		})
	}
	return wk, nil
}

// wakeAll is what partition answers for a resubscription: any partition
// may have been sent a wake-up that was lost.
const wakeAll = -2

// partition maps a message to a partition position, wakeAll after a
// reconnection, or -1.
func (wk *wakeups) partition(msg any) int {
	m, ok := msg.(*redis.Message)
	if !ok {
		return wakeAll
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

func (wk *wakeups) close() {
	close(wk.done)
	for _, ps := range wk.subs {
		_ = ps.Close()
	}
	wk.fwd.Wait()
}
