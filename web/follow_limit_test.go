package web

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestFollowBeyondLimitSays: the stream of a job page opened while the
// console follows maxWatchedJobs other jobs says at once that it does not
// follow this one (event unfollowed), for the page to say it is not live.
// A helper's audit found it opened as any other and never sent the job's
// changes, the page showing a job that had moved on as live.
func TestFollowBeyondLimitSays(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := &http.Transport{MaxIdleConnsPerHost: 2 * maxWatchedJobs}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	open := func(id string) *bufio.Reader {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/events?job="+url.QueryEscape(id), nil)
		testkit.Must(t, err)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := hc.Do(req)
		testkit.Must(t, err)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream of %s: %d", id, resp.StatusCode)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return bufio.NewReader(resp.Body)
	}
	// nextEvent is the name of the next event r sends, "" once it ends
	nextEvent := func(r *bufio.Reader) string {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return ""
			}
			if name, ok := strings.CutPrefix(line, "event: "); ok {
				return strings.TrimSpace(name)
			}
		}
	}
	for i := range maxWatchedJobs {
		r := open(f.enqueue(work{Order: fmt.Sprint(i)}, flow.WithDelay(time.Hour)))
		go func() { // a tab: reads its stream until it ends
			for nextEvent(r) != "" {
			}
		}()
	}
	r := open(f.enqueue(work{Order: "last"}, flow.WithDelay(time.Hour)))
	got := make(chan string, 1)
	go func() { got <- nextEvent(r) }()
	select {
	case ev := <-got:
		if ev != "unfollowed" {
			t.Fatalf("the %dth followed job's stream sent %q first, want unfollowed", maxWatchedJobs+1, ev)
		}
	case <-time.After(testkit.Timeout):
		t.Fatalf("the %dth followed job's stream said nothing", maxWatchedJobs+1)
	}
}
