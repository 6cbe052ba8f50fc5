package web

import (
	"bytes"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/msgview"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestPrettyBoundsWhatItShows: a payload nested deeper than
// msgview.MaxDepth (up to a megabyte of one-element arrays, within the
// payload bound) is shown as a summary, never decoded (decoding it
// overflowed the stack and killed the console); a value JSON cannot print
// (a NaN) falls back to Go's printing, cut at 64 KiB as the JSON is.
func TestPrettyBoundsWhatItShows(t *testing.T) {
	for _, depth := range []int{msgview.MaxDepth + 1, 100000, 1<<20 - 1} {
		s := pretty(append(bytes.Repeat([]byte{0x91}, depth), 0xc0))
		if !strings.Contains(s, "nested more than") || len(s) > 1000 {
			t.Errorf("depth %d: %.200q (%d bytes)", depth, s, len(s))
		}
	}
	if s := pretty(append(bytes.Repeat([]byte{0x91}, 3), 0x01)); s != "[\n  [\n    [\n      1\n    ]\n  ]\n]" {
		t.Errorf("three levels: %q", s)
	}
	b, err := msgpack.Marshal([]any{math.NaN(), strings.Repeat("é", maxShown)})
	testkit.Must(t, err)
	s := pretty(b)
	if !strings.HasSuffix(s, "(cut at 64 KiB)") || len(s) > maxShown+100 || !utf8.ValidString(s) {
		t.Errorf("a NaN and 128 KiB of text: %d bytes, ends %q", len(s), s[max(0, len(s)-40):])
	}
}

// deepWork is a work job whose arguments its producer encoded itself: a
// megabyte of nested one-element arrays (valid msgpack, within the
// payload bound).
type deepWork struct{}

func (deepWork) Kind() string { return "work" }

func (deepWork) EncodeMsgpack(enc *msgpack.Encoder) error {
	_, err := enc.Writer().Write(append(bytes.Repeat([]byte{0x91}, 1<<20-16), 0xc0))
	return err
}

// TestJobPageOfDeepPayload: the page of a job whose arguments nest a
// million levels deep renders (with a summary of them), and the console
// lives on.
func TestJobPageOfDeepPayload(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(deepWork{}, flow.WithDelay(time.Hour))
	code, body := f.get(client(), "/jobs/"+url.PathEscape(id))
	if code != http.StatusOK || !strings.Contains(body, "nested more than") {
		t.Errorf("job page: %d", code)
	}
	if code, _ := f.get(client(), "/"); code != http.StatusOK {
		t.Errorf("overview after it: %d", code)
	}
}

// TestShowsTimesNamesTimedPages: every page that shows a time (whose age
// its script counts from the page's Redis time) is in showsTimes, and
// only those.
func TestShowsTimesNamesTimedPages(t *testing.T) {
	for _, name := range pageNames {
		b, err := templateFS.ReadFile("templates/" + name + ".html")
		testkit.Must(t, err)
		if timed := bytes.Contains(b, []byte(`{{template "time"`)); timed != showsTimes[name] {
			t.Errorf("page %s: shows times %v, in showsTimes %v", name, timed, showsTimes[name])
		}
	}
}
