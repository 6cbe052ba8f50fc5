package web

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestJobPageUnreadableChild: a child whose hash cannot be read (its key
// holds another type) is shown on its parent's page with the error, not
// as deleted, and its sibling as usual. A helper's audit found every
// child with no state read shown as "deleted", which hid the corruption.
func TestJobPageUnreadableChild(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, true)
	id, kids := f.laterParent()
	ref, ok := keys.ParseRef(f.env.NS, kids[0])
	if !ok {
		t.Fatalf("child ID %q", kids[0])
	}
	ctx := context.Background()
	key := ref.Partition.Job(ref.Local)
	testkit.Must(t, f.env.RDB.Del(ctx, key).Err())
	testkit.Must(t, f.env.RDB.Set(ctx, key, "not a job", 0).Err())
	code, body := f.get(client(), jobPath(id))
	if code != http.StatusOK {
		t.Fatalf("parent's page: %d", code)
	}
	row, _ := rowWith(body, `href="`+testPrefix+jobPath(kids[0])+`"`)
	if !strings.Contains(row, "could not be read") || strings.Contains(row, "deleted") {
		t.Errorf("the unreadable child's row %q: want its error, not deleted", row)
	}
	row, _ = rowWith(body, `href="`+testPrefix+jobPath(kids[1])+`"`)
	if !strings.Contains(row, "badge s-scheduled") {
		t.Errorf("the sibling's row %q: want scheduled", row)
	}
}
