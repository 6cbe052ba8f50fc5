package outcome

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestClassify: each outcome is found through wrapping, a negative
// snooze or rate-limit delay is an ordinary error, and a crash wins over
// an outcome it wraps.
func TestClassify(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("step x: %w", err) }
	cases := []struct {
		err  error
		want Kind
	}{
		{errors.New("boom"), KindError},
		{wrap(&Crash{Reason: "child_crash"}), KindCrash},
		{wrap(&Snooze{Delay: time.Second}), KindSnooze},
		{&Snooze{Delay: -1}, KindError},
		{wrap(&RateLimited{Delay: 0}), KindRateLimited},
		{&RateLimited{Delay: -time.Second}, KindError},
		{wrap(&Skip{Reason: "r"}), KindSkip},
		{wrap(&Revoke{Reason: "r"}), KindRevoke},
		{wrap(&Park{Reason: "r", Err: errors.New("x")}), KindPark},
		{wrap(&Wait{Step: "s", Count: 2}), KindWait},
		{errors.Join(&Skip{Reason: "r"}, &Crash{Reason: "c"}), KindCrash},
	}
	for _, tc := range cases {
		if got := Classify(tc.err).Kind; got != tc.want {
			t.Errorf("Classify(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
