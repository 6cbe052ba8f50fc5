package web

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// unreadableOps answers every job brief as unreadable, with a new error
// value on every read, as admin.JobBriefs does for a key of another type.
type unreadableOps struct{ ops }

func (unreadableOps) JobBriefs(_ context.Context, ids []string) (map[string]admin.JobBrief, error) {
	out := map[string]admin.JobBrief{}
	for _, id := range ids {
		out[id] = admin.JobBrief{Err: fmt.Errorf("%w: the job's key holds another type", flow.ErrMalformed)}
	}
	return out, nil
}

// TestFollowedJobUnreadable: a followed job that cannot be read is sent
// once, with its error as text, and not again while it stays so (its
// brief's error is a new value on every read).
func TestFollowedJobUnreadable(t *testing.T) {
	t.Parallel()
	h := newHub(unreadableOps{}, time.Hour, func(err error) { t.Error(err) })
	const id = "default:0:bad"
	out, _, err := h.followJobs(context.Background(), []string{id})
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(out[id], &ev); err != nil {
		t.Fatalf("event %q: %v", out[id], err)
	}
	if msg, _ := ev["error"].(string); msg == "" || ev["State"] != "" {
		t.Fatalf("event %s, want the read's error and no state", out[id])
	}
	if _, ok := ev["Err"]; ok {
		t.Fatalf("event %s carries the error value itself", out[id])
	}
	again, _, err := h.followJobs(context.Background(), []string{id})
	if err != nil || len(again) != 0 {
		t.Fatalf("second read sent %q (%v), want nothing: the job did not change", again, err)
	}
}
