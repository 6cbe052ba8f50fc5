package runtime

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
)

// wakeups delivers the pub/sub messages that say a partition has work.
type wakeups struct {
	ps *redis.PubSub
	// ch carries *redis.Message wake-ups and, after go-redis reconnected
	// the subscription (e.g. its node failed over), *redis.Subscription
	// confirmations: wake-ups published in the gap are lost.
	ch <-chan any
	// index finds a partition's position in Worker.parts by queue channel
	// and partition number.
	index map[string]map[int]int
}

// subscribe listens on the wake channels of every served queue. It returns
// only once the subscription is confirmed, so no wake-up published after
// the first claim can be missed.
func (w *Worker) subscribe(ctx context.Context) (*wakeups, error) {
	wk := &wakeups{index: map[string]map[int]int{}}
	var chans []string
	for i, p := range w.parts {
		c := keys.WakeChannel(p.NS, p.Queue)
		if wk.index[c] == nil {
			wk.index[c] = map[int]int{}
			chans = append(chans, c)
		}
		wk.index[c][p.Index] = i
	}
	wk.ps = w.st.Client().Subscribe(ctx, chans...)
	for range chans {
		if _, err := wk.ps.Receive(ctx); err != nil {
			_ = wk.ps.Close()
			return nil, err
		}
	}
	wk.ch = wk.ps.ChannelWithSubscriptions(redis.WithChannelSize(1024))
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

func (wk *wakeups) close() { _ = wk.ps.Close() }
