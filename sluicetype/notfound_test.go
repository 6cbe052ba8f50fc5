package sluicetype_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/sluicetype"
)

// TestIsNotFound: each not-found sentinel, bare or wrapped, is not found;
// other errors, a state error and nil are not.
func TestIsNotFound(t *testing.T) {
	t.Parallel()
	for _, err := range []error{sluicetype.ErrNotFound, sluicetype.ErrScheduleNotFound, sluicetype.ErrNoDeadEffect,
		fmt.Errorf("job q:0:x: %w", sluicetype.ErrNotFound), errors.Join(errors.New("other"), sluicetype.ErrNoDeadEffect)} {
		if !sluicetype.IsNotFound(err) {
			t.Errorf("IsNotFound(%v) = false", err)
		}
	}
	for _, err := range []error{nil, errors.New("sluice: job not found"), sluicetype.ErrWrongState,
		&sluicetype.StateError{ID: "q:0:x", Op: "cancel", State: "completed"}, sluicetype.ErrConflict} {
		if sluicetype.IsNotFound(err) {
			t.Errorf("IsNotFound(%v) = true", err)
		}
	}
}
