package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestCorruptJobPageOffersItsRemedy: the page of a job whose data cannot
// be read (corrupt) says so and links to its delete and cancel
// confirmations, which the console offers such a job as the operator's
// remedy; the ID search box takes the operator to that page. The page was
// an error page with only a link to the overview, and the search box
// answered it, so the queue page listed the job (with its error) and
// linked to a dead end: the remedy was reachable only by typing its URL.
// A read-only console links to no action.
func TestCorruptJobPageOffersItsRemedy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, ro := range []bool{false, true} {
		f := newFixture(t, Options{ReadOnly: ro}, false)
		id := f.enqueue(work{}, flow.WithDelay(time.Hour))
		ref, ok := keys.ParseRef(f.env.NS, id)
		if !ok {
			t.Fatal(id)
		}
		testkit.Must(t, f.env.RDB.HSet(ctx, ref.Partition.Job(ref.Local), keys.FieldPriority, "not-a-number").Err())
		c := client()
		code, loc, body := f.getLoc(c, "/find?id="+url.QueryEscape(id))
		if code != http.StatusSeeOther || loc != testPrefix+jobPath(id) {
			t.Errorf("read-only %v: find the corrupt job: %d to %q, want 303 to its page\n%s", ro, code, loc, mainOf(body))
		}
		_, body = f.get(c, jobPath(id))
		main := mainOf(body)
		if !strings.Contains(main, "malformed job data") {
			t.Errorf("read-only %v: the corrupt job's page does not say what is wrong with it\n%s", ro, main)
		}
		for _, a := range []string{"delete", "cancel"} {
			// (the page escapes the ID's colons, in lower case)
			link := `href="` + testPrefix + "/confirm/" + a + "?id=" + url.QueryEscape(id) + `"`
			if has := strings.Contains(strings.ToLower(main), strings.ToLower(link)); has == ro {
				t.Errorf("read-only %v: the corrupt job's page links to its %s confirmation: %v\n%s", ro, a, has, main)
			}
		}
		if ro {
			continue
		}
		if code, _, body := f.act(c, "delete", url.Values{"id": {id}}); code != http.StatusSeeOther {
			t.Fatalf("delete of the corrupt job: %d\n%s", code, mainOf(body))
		}
		if _, err := f.ops.Job(ctx, id); !errors.Is(err, flow.ErrNotFound) {
			t.Errorf("the corrupt job after its delete: %v, want not found", err)
		}
	}
}

// getLoc is get that returns the answer's Location too.
func (f *fixture) getLoc(c *http.Client, path string) (int, string, string) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.url+path, nil)
	testkit.Must(f.t, err)
	resp, err := c.Do(req)
	testkit.Must(f.t, err)
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, resp.Header.Get("Location"), b.String()
}
