package web

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestDeleteConfirmCorruptJob: a job whose hash has a field that
// cannot be read (corrupt data) can still be deleted from the console:
// delete is the operator's remedy for it. The delete confirmation reads
// the job to record its creation time and redrive count; a helper's
// review found a job that could not be decoded got no confirmation.
func TestDeleteConfirmCorruptJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{}, flow.WithDelay(time.Hour))
	ref, ok := keys.ParseRef(f.env.NS, id)
	if !ok {
		t.Fatal(id)
	}
	ctx := context.Background()
	testkit.Must(t, f.env.RDB.HSet(ctx, ref.Partition.Job(ref.Local), keys.FieldPriority, "not-a-number").Err())
	c := client()
	code, body := f.get(c, "/confirm/delete?id="+url.QueryEscape(id))
	if code != http.StatusOK {
		t.Fatalf("delete confirmation of a corrupt job: %d\n%s", code, mainOf(body))
	}
	form := hiddenFields(body)
	if code, _, _ := f.post(c, "/act/delete", form); code != http.StatusSeeOther {
		t.Fatalf("delete of the corrupt job: %d", code)
	}
}
