package harness

import (
	"context"
	"fmt"
	"time"
)

// SendPaced makes n calls of send, one at a time, at rate per second, as
// the latency scenario (and its asynq counterpart in bench/peers) sends
// its jobs. Call i is due at start + i/rate; a late call is not made up by
// bunching: it goes at once and counts as lag. send gets the call's index
// and the time it was made, read just before it. SendPaced returns how
// long each call took (from that time to send's return) and the greatest
// lag.
func SendPaced(ctx context.Context, n, rate int, send func(i int, sent time.Time) error) (calls []time.Duration, maxLag time.Duration, err error) {
	interval := time.Duration(float64(time.Second) / float64(rate))
	calls = make([]time.Duration, 0, n)
	start := time.Now()
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		if err := sleepUntil(ctx, due); err != nil {
			return nil, 0, fmt.Errorf("%w (%d of %d calls made)", err, i, n)
		}
		sent := time.Now()
		maxLag = max(maxLag, sent.Sub(due))
		if err := send(i, sent); err != nil {
			return nil, 0, fmt.Errorf("call %d of %d: %w", i, n, err)
		}
		calls = append(calls, time.Since(sent))
	}
	return calls, maxLag, nil
}

// Sleep waits for d or the end of ctx, whose cause it then returns.
func Sleep(ctx context.Context, d time.Duration) error {
	return sleepUntil(ctx, time.Now().Add(d))
}

// sleepUntil waits until t or the end of ctx.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
