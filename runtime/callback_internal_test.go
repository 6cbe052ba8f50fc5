package runtime

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/store"
)

// panickyPolicy is a handler whose RetryPolicy panics, as a table of
// delays indexed past its end does.
type panickyPolicy struct{}

func (panickyPolicy) Work(context.Context, *Attempt) ([]byte, error) { return nil, nil }

func (panickyPolicy) RetryDelay(attempt int, err error) time.Duration {
	delays := []time.Duration{time.Second}
	return delays[attempt]
}

// calloutWorker is a worker (never run) whose "k" handler is h, logging
// to a buffer.
func calloutWorker(t *testing.T, h Handler, o Options) (*Worker, *bytes.Buffer) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never used
	t.Cleanup(func() { _ = rdb.Close() })
	var logs bytes.Buffer
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	w, err := NewWorker(rdb, handlerMap{"k": h}, o)
	if err != nil {
		t.Fatal(err)
	}
	return w, &logs
}

// notPanicking fails the test if f panics (rather than ending the test
// binary, as the same panic on a worker's runner goroutine ends its
// process).
func notPanicking(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s panicked: %v", what, p)
		}
	}()
	f()
}

// TestPanickingRetryPolicyFallsBack: a RetryPolicy is called when an
// attempt is settled, outside the handler's recovery: its panic ended the
// worker's process (and the next worker's, until the job was
// quarantined). It now gives Options.Backoff's delay, logged with the
// stack; a panicking Options.Backoff gives DefaultBackoff's.
func TestPanickingRetryPolicyFallsBack(t *testing.T) {
	a := &Attempt{ID: "default:0:1", Kind: "k", Attempt: 3}
	w, logs := calloutWorker(t, panickyPolicy{}, Options{Backoff: func(n int) time.Duration { return time.Duration(n) * time.Minute }})
	notPanicking(t, "classify", func() {
		ack := w.classify(a, errors.New("boom"))
		if ack.Code != store.CodeRetry || ack.Delay != 4*time.Minute {
			t.Errorf("ack %s after %s, want %s after Options.Backoff(4) = 4m", ack.Code, ack.Delay, store.CodeRetry)
		}
	})
	if l := logs.String(); !strings.Contains(l, "retry policy panicked; using Options.Backoff") ||
		!strings.Contains(l, "index out of range") || !strings.Contains(l, "RetryDelay") {
		t.Errorf("no record of the policy's panic with its stack:\n%s", l)
	}

	w, logs = calloutWorker(t, panickyPolicy{}, Options{Backoff: func(int) time.Duration { panic("no backoff") }})
	notPanicking(t, "retryDelay", func() {
		if d := w.retryDelay(a, errors.New("boom")); d < 8*time.Second*8/10 || d > 8*time.Second*12/10 {
			t.Errorf("delay %s, want DefaultBackoff(4): 8s ±20%%", d)
		}
	})
	if l := logs.String(); !strings.Contains(l, "Options.Backoff panicked; using DefaultBackoff") || !strings.Contains(l, "no backoff") {
		t.Errorf("no record of Backoff's panic:\n%s", l)
	}
}

// TestPanickingNonConsumingCountsTheAttempt: Options.NonConsuming is
// called on the same path; its panic ended the process too. It now
// counts as false (the attempt is spent, the job retried after its
// backoff), logged.
func TestPanickingNonConsumingCountsTheAttempt(t *testing.T) {
	a := &Attempt{ID: "default:0:1", Kind: "k", Attempt: 1}
	w, logs := calloutWorker(t, HandlerFunc(func(context.Context, *Attempt) ([]byte, error) { return nil, nil }), Options{
		Backoff:      func(int) time.Duration { return time.Hour },
		NonConsuming: func(err error) bool { panic("not consuming?") },
	})
	notPanicking(t, "classify", func() {
		ack := w.classify(a, errors.New("boom"))
		if ack.Code != store.CodeRetry || ack.Delay != time.Hour {
			t.Errorf("ack %s after %s, want %s after 1h", ack.Code, ack.Delay, store.CodeRetry)
		}
	})
	if l := logs.String(); !strings.Contains(l, "Options.NonConsuming panicked; the attempt counts") || !strings.Contains(l, "not consuming?") {
		t.Errorf("no record of NonConsuming's panic:\n%s", l)
	}
}
