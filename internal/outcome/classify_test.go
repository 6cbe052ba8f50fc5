package outcome

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
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
		{wrap(&sluicetype.CrashError{Reason: "child_crash"}), KindCrash},
		{wrap(&sluicetype.SnoozeError{Delay: time.Second}), KindSnooze},
		{&sluicetype.SnoozeError{Delay: -1}, KindError},
		{wrap(&sluicetype.RateLimitedError{Delay: 0}), KindRateLimited},
		{&sluicetype.RateLimitedError{Delay: -time.Second}, KindError},
		{wrap(&sluicetype.SkipError{Reason: "r"}), KindSkip},
		{wrap(&sluicetype.RevokeError{Reason: "r"}), KindRevoke},
		{wrap(&Park{Reason: "r", Err: errors.New("x")}), KindPark},
		{wrap(&sluicetype.WaitingError{Step: "s", Count: 2}), KindWait},
		{wrap(&sluicetype.SuspendedError{Signals: []string{"go"}}), KindSuspend},
		{errors.Join(&sluicetype.SkipError{Reason: "r"}, &sluicetype.CrashError{Reason: "c"}), KindCrash},
	}
	for _, tc := range cases {
		if got := Classify(tc.err).Kind; got != tc.want {
			t.Errorf("Classify(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
