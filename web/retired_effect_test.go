package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// retiredOps answers RedriveEffects as admin.Client does for a dead effect
// of a partition a shrink of its queue retired.
type retiredOps struct{ ops }

func (retiredOps) RedriveEffects(_ context.Context, ids ...string) error {
	return errors.Join(fmt.Errorf("dead effect %s: %w", ids[0], fmt.Errorf(
		"%w: no worker relays its outbox; left dead (resize the queue back to take the partition back, then send it again)", store.ErrRetired)))
}

// TestRetiredEffectRedriveIsConflict: a dead effect of a partition a
// shrink retired is refused by its redrive (no worker relays that
// partition: resize the queue back first), a refusal about the queue's
// layout in Redis, which the request cannot change: 409, as the console's
// other refusals about the data are. It was 500, and logged as the
// console breaking (sluicetype.ErrLayoutMismatch was not mapped).
func TestRetiredEffectRedriveIsConflict(t *testing.T) {
	t.Parallel()
	r := &retiredOps{}
	f := newFixture(t, Options{ops: r}, false)
	r.ops = adminOps{Client: f.ops}
	code, _, body := f.act(client(), "redrive-effect", url.Values{"effect": {testQueue + ":1:06h4xdkh07xyqkm5"}})
	if code != http.StatusConflict {
		t.Fatalf("redrive of a retired partition's dead effect: %d, want 409\n%s", code, mainOf(body))
	}
}
