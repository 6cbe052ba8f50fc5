package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// kept are the signals job id keeps, as "name #seq".
func (f *fixture) kept(id string) string {
	f.t.Helper()
	var s []string
	for _, sg := range f.env.Job(id).Signals {
		s = append(s, fmt.Sprintf("%s #%d", sg.Name, sg.Seq))
	}
	return strings.Join(s, ", ")
}

// csrfIn returns the CSRF token c holds for the console (a page it
// loaded set it).
func (f *fixture) csrfIn(c *http.Client) string {
	f.t.Helper()
	for _, ck := range c.Jar.Cookies(must(url.Parse(f.url + "/"))) {
		if ck.Name == csrfCookie {
			return ck.Value
		}
	}
	f.t.Fatal("no CSRF cookie: load a page first")
	return ""
}

// fieldOf returns the value of the hidden field name of a page's form.
func fieldOf(body, name string) string {
	_, rest, ok := strings.Cut(body, `name="`+name+`" value="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// TestDiscardSignalAction: a job keeping signals offers Discard on the
// first kept of each name (the one a wait takes next, which
// DiscardSignal discards). Its confirmation shows the signal with its
// payload escaped; confirmed, the signal is discarded and the flash
// message names it (its sequence number) with its payload, escaped, to
// send it again corrected. The form posted again (a double click)
// discards nothing more and says so. A confirmation of a signal taken
// or discarded since its page was shown is refused (409), not followed
// by the next of the name; a name with none kept is an error (404), on
// the confirmation page and its POST, not a success.
func TestDiscardSignalAction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{}, flow.WithDelay(time.Hour))
	for _, sg := range []struct {
		name    string
		payload any
	}{{"approve", "<b>not a decision</b>"}, {"approve", map[string]any{"ok": true}}, {"other", 7}} {
		_, err := f.ops.Signal(ctx, id, sg.name, sg.payload)
		testkit.Must(t, err)
	}
	c := client()
	_, page := f.get(c, jobPath(id))
	if n := strings.Count(page, `data-action="discard-signal"`); n != 2 {
		t.Errorf("the job page offers %d discards, want 2 (the first kept of each name)\n%s", n, page)
	}
	for _, want := range []string{"signal=approve&amp;seq=1", "signal=other&amp;seq=3"} {
		if !strings.Contains(page, want) {
			t.Errorf("the job page has no discard link with %q\n%s", want, page)
		}
	}
	if strings.Contains(page, "seq=2") {
		t.Errorf("the job page offers to discard approve #2, which a discard of approve does not take")
	}

	link := "/confirm/discard-signal?" + url.Values{"id": {id}, "signal": {"approve"}, "seq": {"1"}}.Encode()
	code, body := f.get(c, link)
	if code != http.StatusOK || !strings.Contains(body, `id="signal-payload">&#34;\u003cb\u003enot a decision`) || strings.Contains(body, "<b>not a decision") {
		t.Fatalf("confirmation: %d, want 200 showing the payload escaped\n%s", code, body)
	}
	form := url.Values{"csrf": {csrfOf(body)}, "id": {id}, "signal": {fieldOf(body, "signal")}, "seq": {fieldOf(body, "seq")},
		"once": {fieldOf(body, "once")}}
	if form.Get("seq") != "1" || form.Get("once") == "" || form.Get("signal") != "approve" {
		t.Fatalf("the confirmation's form: %v, want signal approve, seq 1 and a once key", form)
	}
	if code, loc, body := f.post(c, "/act/discard-signal", form); code != http.StatusSeeOther || loc != testPrefix+jobPath(id) {
		t.Fatalf("discard: %d to %q\n%s", code, loc, body)
	}
	if k := f.kept(id); k != "approve #2, other #3" {
		t.Fatalf("after the discard the job keeps %s, want approve #2, other #3", k)
	}
	_, page = f.get(c, jobPath(id))
	msg := "discarded signal approve #1 of " + id + "; its payload: &#34;&lt;b&gt;not a decision&lt;/b&gt;&#34;"
	if !strings.Contains(page, msg) || strings.Contains(page, "<b>not a decision") {
		t.Errorf("after the discard the page does not say %q\n%s", msg, page)
	}
	// the form again: the once key runs it once
	if code, _, body := f.post(c, "/act/discard-signal", form); code != http.StatusSeeOther {
		t.Fatalf("discard posted again: %d\n%s", code, body)
	}
	if k := f.kept(id); k != "approve #2, other #3" {
		t.Fatalf("the form posted twice: the job keeps %s, want approve #2, other #3", k)
	}
	if _, page = f.get(c, jobPath(id)); !strings.Contains(page, "done already, by this confirmation posted before: discarded signal approve #1") {
		t.Errorf("the form posted again does not say it was done already\n%s", page)
	}

	// the old link: #1 is gone, the next is #2, which it did not show
	if code, body := f.get(c, link); code != http.StatusConflict || !strings.Contains(body, "no longer the next one kept") {
		t.Errorf("the confirmation of a signal discarded since: %d, want 409\n%s", code, body)
	}
	// the old confirmation's form with another key (a page shown twice)
	form.Set("once", "another-confirmation")
	if code, _, body := f.post(c, "/act/discard-signal", form); code != http.StatusConflict || !strings.Contains(body, "no longer the next one kept") {
		t.Errorf("a confirmation of a signal discarded since, posted: %d, want 409\n%s", code, body)
	}
	if k := f.kept(id); k != "approve #2, other #3" {
		t.Fatalf("after the refused discards the job keeps %s, want approve #2, other #3", k)
	}

	if code, _, body := f.act(c, "discard-signal", url.Values{"id": {id}, "signal": {"approve"}}); code != http.StatusSeeOther {
		t.Fatalf("discard the next approve: %d\n%s", code, body)
	}
	if k := f.kept(id); k != "other #3" {
		t.Fatalf("after the second discard the job keeps %s, want other #3", k)
	}
	if _, page = f.get(c, jobPath(id)); !strings.Contains(page, `discarded signal approve #2 of `+id+`; its payload: {&#34;ok&#34;:true}`) {
		t.Errorf("after the second discard the page does not say it\n%s", page)
	}

	// none kept: an error on the confirmation page and on its POST
	if code, body := f.get(c, "/confirm/discard-signal?"+url.Values{"id": {id}, "signal": {"approve"}}.Encode()); code != http.StatusNotFound ||
		!strings.Contains(body, "keeps no signal approve") {
		t.Errorf("confirmation with none kept: %d, want 404 saying so\n%s", code, body)
	}
	code, loc, body := f.post(c, "/act/discard-signal", url.Values{"csrf": {f.csrfIn(c)}, "id": {id}, "signal": {"approve"}})
	if code != http.StatusNotFound || !strings.Contains(body, `class="flash error"`) || !strings.Contains(body, "keeps no signal approve") {
		t.Errorf("discard with none kept: %d to %q, want 404 with the error\n%s", code, loc, body)
	}
}

// TestDiscardSignalRefused: a running job's signal is not discarded (its
// attempt may be taking it): the page offers no Discard, and its
// confirmation, or a form posted from a page shown before it ran, says
// why (409), nothing discarded. With HideArgs the message names the
// signal but not its payload.
func TestDiscardSignalRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, Options{}, false)
	f.startWorker(runtime.Options{})
	id := f.enqueue(block{})
	if got := testkit.Recv(t, f.started, "the job to start"); got != id {
		t.Fatalf("started %s, want %s", got, id)
	}
	_, err := f.ops.Signal(ctx, id, "approve", "yes")
	testkit.Must(t, err)
	c := client()
	_, page := f.get(c, jobPath(id))
	if strings.Contains(page, `data-action="discard-signal"`) || !strings.Contains(page, "signal approve #1") {
		t.Errorf("a running job's page offers a discard, or does not show its signal\n%s", page)
	}
	const why = "cannot discard signal approve of job "
	if code, body := f.get(c, "/confirm/discard-signal?"+url.Values{"id": {id}, "signal": {"approve"}}.Encode()); code != http.StatusConflict ||
		!strings.Contains(body, why) || !strings.Contains(body, "it is running (its attempt may be taking it") {
		t.Errorf("confirmation for a running job: %d, want 409 saying why\n%s", code, body)
	}
	// a form from a page shown before the job ran
	code, _, body := f.post(c, "/act/discard-signal", url.Values{"csrf": {f.csrfIn(c)}, "id": {id}, "signal": {"approve"}, "seq": {"1"}})
	if code != http.StatusConflict || !strings.Contains(body, why) {
		t.Errorf("discard on a running job: %d, want 409 saying why\n%s", code, body)
	}
	if k := f.kept(id); k != "approve #1" {
		t.Errorf("after the refused discard the job keeps %q, want approve #1", k)
	}
	_, err = f.ops.CancelJob(ctx, id)
	testkit.Must(t, err)
	testkit.Recv(t, f.canceled, "the job's context to be cancelled")

	h := newFixture(t, Options{HideArgs: true}, false)
	hid := h.enqueue(work{}, flow.WithDelay(time.Hour))
	_, err = h.ops.Signal(ctx, hid, "approve", "secret-payload")
	testkit.Must(t, err)
	hc := client()
	if _, body := h.get(hc, "/confirm/discard-signal?"+url.Values{"id": {hid}, "signal": {"approve"}}.Encode()); strings.Contains(body, "secret-payload") ||
		!strings.Contains(body, "hidden (hide-args)") {
		t.Errorf("with HideArgs the confirmation shows the payload\n%s", body)
	}
	if code, _, body := h.act(hc, "discard-signal", url.Values{"id": {hid}, "signal": {"approve"}}); code != http.StatusSeeOther {
		t.Fatalf("discard with HideArgs: %d\n%s", code, body)
	}
	if _, page := h.get(hc, jobPath(hid)); !strings.Contains(page, "discarded signal approve #1 of "+hid+"; its payload: hidden (hide-args)") ||
		strings.Contains(page, "secret-payload") {
		t.Errorf("with HideArgs the discard's message shows the payload, or does not name the signal\n%s", page)
	}
}

// racingOps reads a job as it was, then has another operator discard the
// signal it showed before the console's discard runs.
type racingOps struct {
	ops
	armed  atomic.Bool
	before func()
}

func (r *racingOps) Job(ctx context.Context, id string) (*flow.JobInfo, error) {
	j, err := r.ops.Job(ctx, id)
	if err == nil && r.armed.CompareAndSwap(true, false) {
		r.before()
	}
	return j, err
}

// TestDiscardSignalRaceDiscardsNoOther: the console checks the signal its
// confirmation showed is the next one kept, and then discards that one
// only: when it is taken (here discarded by another operator) between the
// check and the discard, the next signal of its name is kept.
func TestDiscardSignalRaceDiscardsNoOther(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := &racingOps{}
	f := newFixture(t, Options{ops: r}, false)
	r.ops = adminOps{Client: f.ops}
	id := f.enqueue(work{}, flow.WithDelay(time.Hour))
	for _, p := range []string{"bad", "good"} {
		_, err := f.ops.Signal(ctx, id, "approve", p)
		testkit.Must(t, err)
	}
	r.before = func() {
		if _, err := f.ops.DiscardSignal(ctx, id, "approve"); err != nil {
			t.Errorf("the other operator's discard: %v", err)
		}
	}
	c := client()
	code, body := f.get(c, "/confirm/discard-signal?"+url.Values{"id": {id}, "signal": {"approve"}, "seq": {"1"}}.Encode())
	if code != http.StatusOK {
		t.Fatalf("confirmation: %d\n%s", code, body)
	}
	form := url.Values{"csrf": {csrfOf(body)}, "id": {id}, "signal": {"approve"}, "seq": {"1"}, "once": {fieldOf(body, "once")}}
	r.armed.Store(true)
	code, _, body = f.post(c, "/act/discard-signal", form)
	if k := f.kept(id); k != "approve #2" {
		t.Fatalf("approve #1 taken between the console's check and its discard: the job keeps %q, want approve #2 (answered %d)\n%s", k, code, body)
	}
	if code != http.StatusConflict || !strings.Contains(body, "no longer the next one kept") {
		t.Errorf("the refused discard answered %d, want 409 saying #1 is no longer the next one kept (as the check before it would)\n%s", code, body)
	}
}

// TestDiscardRaceStatusAsCheck: a discard the script refuses (the
// signal taken between the console's check and its discard) is answered
// as the check meeting that state answers: here the signal taken was the
// last kept of its name, and both say none is kept (404), where the race
// answered 409.
func TestDiscardRaceStatusAsCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := &racingOps{}
	f := newFixture(t, Options{ops: r}, false)
	r.ops = adminOps{Client: f.ops}
	id := f.enqueue(work{}, flow.WithDelay(time.Hour))
	_, err := f.ops.Signal(ctx, id, "approve", "bad")
	testkit.Must(t, err)
	r.before = func() {
		if _, err := f.ops.DiscardSignal(ctx, id, "approve"); err != nil {
			t.Errorf("the other operator's discard: %v", err)
		}
	}
	c := client()
	code, body := f.get(c, "/confirm/discard-signal?"+url.Values{"id": {id}, "signal": {"approve"}, "seq": {"1"}}.Encode())
	if code != http.StatusOK {
		t.Fatalf("confirmation: %d\n%s", code, body)
	}
	form := url.Values{"csrf": {csrfOf(body)}, "id": {id}, "signal": {"approve"}, "seq": {"1"}, "once": {fieldOf(body, "once")}}
	r.armed.Store(true)
	raced, _, rbody := f.post(c, "/act/discard-signal", form)

	// the same form, posted again now that #1 is gone (a fresh once key)
	code, body = f.get(c, "/confirm/discard-signal?"+url.Values{"id": {id}, "signal": {"approve"}, "seq": {"1"}}.Encode())
	checked, cbody := code, body
	if code == http.StatusOK {
		form = url.Values{"csrf": {csrfOf(body)}, "id": {id}, "signal": {"approve"}, "seq": {"1"}, "once": {fieldOf(body, "once")}}
		checked, _, cbody = f.post(c, "/act/discard-signal", form)
	}
	if raced != checked {
		t.Errorf("a discard of the last kept signal, taken between check and discard, answered %d; the check meeting the same state answers %d\nraced: %s\nchecked: %s",
			raced, checked, excerpt(rbody), excerpt(cbody))
	}
}

func excerpt(s string) string {
	if i := strings.Index(s, "signal approve"); i >= 0 {
		return s[max(0, i-200):min(len(s), i+300)]
	}
	if len(s) > 600 {
		return s[:600]
	}
	return s
}
