package flow_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestSignalErrorsCutALongID: a Signal to an ID of any length (a caller's
// bug: a megabyte where an ID goes) answers an error that quotes the ID
// cut short with its length, as the refusals of a bad ID or name do, not
// the whole of it: an error is logged and sent on. Both the store's answer
// (no such job) and the refusals made before the call (a payload over the
// limit) are checked.
func TestSignalErrorsCutALongID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := flow.NewClient(realRedis(t), flow.ClientOptions{Namespace: redistest.NewNamespace(t)})
	testkit.Must(t, err)
	id := "default:0:" + strings.Repeat("x", 100_000)
	length := "(" + strconv.Itoa(len(id)) + " bytes)"
	for _, tc := range []struct {
		what    string
		payload any
		want    error
	}{
		{"no such job", 1, flow.ErrNotFound},
		{"a payload over the limit", strings.Repeat("p", flow.MaxSignalPayload+1), flow.ErrInvalid},
	} {
		err := c.Signal(ctx, id, "go", tc.payload)
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.what, err, tc.want)
		}
		if msg := err.Error(); len(msg) > 500 || !strings.Contains(msg, length) {
			t.Errorf("%s: an error of %d bytes (%.120s...), want the ID cut short, naming its length %s", tc.what, len(msg), msg, length)
		}
	}
}
