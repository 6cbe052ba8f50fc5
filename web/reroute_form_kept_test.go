package web

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// TestRerouteErrorKeepsTheForm: a reroute refused (a delay that is not a
// positive duration) shows its form again with what
// the operator gave: the worker, the fallback policy chosen and its
// delay. The policy went back to "wait" and the delay was emptied, so
// that the form posted again with the delay alone corrected was refused
// as a wait with a delay, and with none pinned the job with no fallback.
func TestRerouteErrorKeepsTheForm(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{}, flow.WithDelay(time.Hour))
	c := client()
	for _, tc := range []struct {
		form url.Values
		code int
	}{
		{url.Values{"worker": {"ghost-worker"}, "policy": {"after"}, "delay": {"-5m"}}, http.StatusBadRequest},
		{url.Values{"worker": {"ghost-worker"}, "policy": {"fail"}, "delay": {"5 minutes"}}, http.StatusBadRequest},
	} {
		tc.form.Set("id", id)
		code, _, body := f.act(c, "reroute", tc.form)
		if code != tc.code {
			t.Fatalf("reroute %v: %d, want %d\n%s", tc.form, code, tc.code, mainOf(body))
		}
		main := mainOf(body)
		if !strings.Contains(main, `name="worker" placeholder="worker ID" aria-label="worker" value="ghost-worker"`) {
			t.Errorf("reroute %v: the form again lost the worker\n%s", tc.form, main)
		}
		if !regexp.MustCompile(`<option value="` + tc.form.Get("policy") + `" selected>`).MatchString(main) {
			t.Errorf("reroute %v: the form again does not keep the policy %q\n%s", tc.form, tc.form.Get("policy"), main)
		}
		if !regexp.MustCompile(`name="delay"[^>]*value="` + regexp.QuoteMeta(tc.form.Get("delay")) + `"`).MatchString(main) {
			t.Errorf("reroute %v: the form again lost the delay %q\n%s", tc.form, tc.form.Get("delay"), main)
		}
	}
}
