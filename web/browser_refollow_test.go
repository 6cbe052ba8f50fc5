package web

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestBrowserRefollowedJobPageLive: a job page opened while the console
// followed its limit of jobs says it is not live; once there is room and
// its stream reconnects (the console restarted, a proxy cut it), the
// console follows the job again and the note goes. A helper's audit
// found the note stayed for good, on a page live again.
func TestBrowserRefollowedJobPageLive(t *testing.T) {
	cut := newStreamCutter()
	f := newFixture(t, Options{Auth: cut.middleware, Insecure: true}, false)
	ctx := browser(t)

	// maxWatchedJobs other tabs, each followed once its first job event
	// arrives
	fill, unfill := context.WithCancel(context.Background())
	defer unfill()
	tr := &http.Transport{MaxIdleConnsPerHost: 2 * maxWatchedJobs}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	followed := make(chan struct{}, maxWatchedJobs)
	for i := range maxWatchedJobs {
		id := f.enqueue(work{Order: fmt.Sprint(i)}, flow.WithDelay(time.Hour))
		req, err := http.NewRequestWithContext(fill, http.MethodGet, f.url+"/events?job="+url.QueryEscape(id), nil)
		testkit.Must(t, err)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := hc.Do(req)
		testkit.Must(t, err)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream of %s: %d", id, resp.StatusCode)
		}
		go func() {
			defer resp.Body.Close()
			r := bufio.NewReader(resp.Body)
			said := false
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if line == "event: job\n" && !said {
					said = true
					followed <- struct{}{}
				}
			}
		}()
	}
	for range maxWatchedJobs {
		testkit.Recv(t, followed, "every other tab's job to be followed")
	}

	id := f.enqueue(work{Order: "last"}, flow.WithDelay(time.Hour))
	do(t, ctx, "the job page past the limit", chromedp.Navigate(f.url+jobPath(id)))
	until(t, ctx, "the page to say it is not live", `!!document.getElementById("unfollowed")`)

	// the other tabs close; then the page's stream is cut and reconnects
	unfill()
	redistest.Within(t, testkit.Timeout, "the other tabs' streams to end", func() (bool, string) {
		n := cut.open()
		return n == 1, fmt.Sprintf("%d streams open", n)
	})
	if n := cut.cut(id); n != 1 {
		t.Fatalf("cut %d streams of the page's job, want 1", n)
	}
	until(t, ctx, "the note to go once the reconnected stream follows the job",
		`!document.getElementById("unfollowed") && !!document.querySelector("#live .live-dot.on")`)
}

// streamCutter is an Auth middleware that keeps the live streams it lets
// through, to count them and end them (as a restart or a proxy would).
type streamCutter struct {
	mu      sync.Mutex
	streams map[*http.Request]context.CancelFunc
}

func newStreamCutter() *streamCutter {
	return &streamCutter{streams: map[*http.Request]context.CancelFunc{}}
}

func (s *streamCutter) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/events" {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		r = r.WithContext(ctx)
		s.mu.Lock()
		s.streams[r] = cancel
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.streams, r)
			s.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// open is the number of streams open.
func (s *streamCutter) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.streams)
}

// cut ends the streams following job and returns how many it ended.
func (s *streamCutter) cut(job string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for r, cancel := range s.streams {
		if strings.Contains(r.URL.RawQuery, "job="+url.QueryEscape(job)) {
			cancel()
			n++
		}
	}
	return n
}
