package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// zeros is an endless stream of 'a' bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// TestHugePostBodyRefusedUnread: a POST's body is read only up to
// maxFormBytes, and a larger one is refused with 413, before any
// credentials are checked (the guard reads the CSRF token from the body
// first). A review found the guard read whatever anyone sent, with no
// credentials at all: a url-encoded body up to Go's 10 MB form limit into
// memory, and a multipart one without limit (its file parts written to
// temporary files on the console's disk) — from anyone who can reach it,
// sending a CSRF cookie and field of its own choosing.
func TestHugePostBodyRefusedUnread(t *testing.T) {
	t.Parallel()
	_, h, _ := limitConsole(t, Options{Token: "s3cret-token"})
	csrf := strings.Repeat("c", 43)
	const huge = 40 << 20
	const boundary = "xyzzy"
	multipart := func() io.Reader {
		head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n" + csrf + "\r\n" +
			"--" + boundary + "\r\nContent-Disposition: form-data; name=\"f\"; filename=\"f\"\r\nContent-Type: application/octet-stream\r\n\r\n"
		return io.MultiReader(strings.NewReader(head), io.LimitReader(zeros{}, huge), strings.NewReader("\r\n--"+boundary+"--\r\n"))
	}
	urlencoded := func() io.Reader {
		return io.MultiReader(strings.NewReader("csrf="+csrf+"&token="), io.LimitReader(zeros{}, 8<<20))
	}
	for _, tc := range []struct {
		name, path, ctype string
		body              func() io.Reader
	}{
		{"multipart action", "/act/cancel", "multipart/form-data; boundary=" + boundary, multipart},
		{"multipart login", "/login", "multipart/form-data; boundary=" + boundary, multipart},
		{"url-encoded action", "/act/cancel", "application/x-www-form-urlencoded", urlencoded},
		{"url-encoded login", "/login", "application/x-www-form-urlencoded", urlencoded},
	} {
		body := &countingReader{r: tc.body()}
		req := httptest.NewRequest(http.MethodPost, tc.path, body)
		req.Header.Set("Content-Type", tc.ctype)
		req.AddCookie(&http.Cookie{Name: csrfCookie, Value: csrf})
		req.RemoteAddr = "203.0.113.7:50000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusRequestEntityTooLarge || body.n > 2*maxFormBytes {
			t.Errorf("%s: %d after reading %d bytes of the body; want 413 after at most %d", tc.name, w.Code, body.n, 2*maxFormBytes)
		}
	}
}

// TestSmallPostBodyRead: a form within maxFormBytes is read as before, its
// CSRF token found in it; a malformed one is refused as such (400).
func TestSmallPostBodyRead(t *testing.T) {
	t.Parallel()
	_, h, _ := limitConsole(t, Options{Token: "s3cret-token"})
	csrf := strings.Repeat("c", 43)
	for _, tc := range []struct {
		body string
		want int
	}{
		{"csrf=" + csrf + "&token=s3cret-token&pad=" + strings.Repeat("a", maxFormBytes/2), http.StatusSeeOther},
		{"csrf=" + csrf + "&token=%zz", http.StatusBadRequest},
	} {
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: csrfCookie, Value: csrf})
		req.RemoteAddr = "203.0.113.8:50000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != tc.want {
			t.Errorf("login with a body of %d bytes: %d, want %d\n%s", len(tc.body), w.Code, tc.want, w.Body)
		}
	}
}

// TestMalformedActionFormRefused: an action's form that does not parse
// is refused (400) and does nothing. The guard parsed the body first, for
// its CSRF token, and Go's form parser skips a malformed pair and keeps
// the others: the action's own check of the parse error never saw one,
// and the cancel ran without the job's creation time its form posted,
// which it checks to refuse acting on another job than the one shown.
func TestMalformedActionFormRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{})
	c := client()
	code, page := f.get(c, "/confirm/cancel?id="+url.QueryEscape(id))
	if code != http.StatusOK {
		t.Fatalf("confirm page: %d", code)
	}
	body := "csrf=" + csrfOf(page) + "&id=" + url.QueryEscape(id) + "&created=%zz"
	req, err := http.NewRequest(http.MethodPost, f.url+"/act/cancel", strings.NewReader(body))
	testkit.Must(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	testkit.Must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a cancel whose form does not parse: %d, want 400", resp.StatusCode)
	}
	if j := f.env.Job(id); j.State != flow.StateAvailable {
		t.Errorf("the job is %s after a cancel whose form did not parse; want it available still", j.State)
	}
}
