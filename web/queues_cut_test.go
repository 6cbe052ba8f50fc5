package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestOverviewSaysQueuesLeftOut: with more queues registered than
// admin.MaxQueuesListed, the overview says how many it shows of how many
// and how to open one it leaves out; with fewer it says nothing. A
// helper's audit found it showed the first MaxQueuesListed as if they
// were all.
func TestOverviewSaysQueuesLeftOut(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	ctx := context.Background()
	c := client()
	if code, body := f.get(c, "/"); code != http.StatusOK || strings.Contains(body, `id="queues-cut"`) {
		t.Fatalf("overview of a namespace with few queues: %d, or it says some are left out\n%s", code, body)
	}
	const extra = 3
	args := []any{}
	for i := range admin.MaxQueuesListed + extra {
		args = append(args, "q"+strconv.Itoa(100000+i), "1:1:1767225600000:1767225600000")
	}
	testkit.Must(t, f.env.RDB.HSet(ctx, keys.Queues(f.env.NS), args...).Err())
	n, err := f.ops.QueueCount(ctx)
	testkit.Must(t, err)
	if n != admin.MaxQueuesListed+extra {
		t.Fatalf("QueueCount: %d, want %d", n, admin.MaxQueuesListed+extra)
	}
	want := fmt.Sprintf("Showing %d of %d queues", admin.MaxQueuesListed, admin.MaxQueuesListed+extra)
	// the page may be served from the snapshot read before the queues
	// were added (half a poll interval): ask until it is read again
	redistest.Within(t, testkit.Timeout, "the overview to say queues are left out", func() (bool, string) {
		code, body := f.get(c, "/")
		i := strings.Index(body, "<h1>")
		return code == http.StatusOK && strings.Contains(body, want) && strings.Contains(body, testPrefix+"/queues/&lt;name&gt;"),
			fmt.Sprintf("%d\n%.1500s", code, body[max(i, 0):])
	})
}
