package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
)

// actionLink is the href of the job page's link to action name's
// confirmation, "" when the page has none.
func actionLink(body, name string) string {
	m := regexp.MustCompile(`href="([^"]*/confirm/` + regexp.QuoteMeta(name) + `\?[^"]*)"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// TestJobPageLinksRecordTheJobShown: a delete chosen on a job page that
// showed the job cancelled, the job redriven by another operator before
// the Delete link was followed, is refused (409) and the job left. The
// job page's links named the job by ID alone, so the confirmation
// recorded the job as it was when the link was followed (available, which
// the confirmation page does not show), and the Confirm deleted a job the
// operator had seen cancelled: the gap between the job page and the
// confirmation was not guarded, only the one between the confirmation and
// its post.
func TestJobPageLinksRecordTheJobShown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.cancelled(work{}, 1)[0]
	c := client()
	code, body := f.get(c, "/jobs/"+url.PathEscape(id))
	if code != http.StatusOK {
		t.Fatalf("job page: %d", code)
	}
	link := actionLink(body, "delete")
	if link == "" {
		t.Fatalf("the job page offers no delete\n%s", mainOf(body))
	}
	if _, err := f.ops.Redrive(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(link)
	testkit.Must(t, err)
	code, body = f.get(c, u.Path[len(testPrefix):]+"?"+u.RawQuery)
	if code == http.StatusOK {
		code, _, body = f.post(c, "/act/delete", hiddenFields(body))
	}
	j, err := f.ops.Job(context.Background(), id)
	if err != nil {
		t.Fatalf("a delete chosen on the page that showed the job cancelled deleted it once redriven (link %s, last answer %d): %v", link, code, err)
	}
	if code != http.StatusConflict || j.State != flow.StateAvailable {
		t.Fatalf("last answer %d, job %s; want 409 and it available\n%s", code, j.State, mainOf(body))
	}
}
