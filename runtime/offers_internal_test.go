package runtime

import (
	"fmt"
	"testing"
	"time"
)

// TestOffersForgetTheOld: a claim's offer stays known for keep after its
// claim was sent, then is forgotten, and the record holds only what may
// still push however many claims were made (one per claim under load).
func TestOffersForgetTheOld(t *testing.T) {
	o := newOffers()
	start := time.Unix(1_700_000_000, 0)
	const keep = 10 * time.Second
	for i := range 100_000 {
		o.made(fmt.Sprint(i), start.Add(time.Duration(i)*time.Millisecond), keep)
	}
	// the last claim was sent at 99.999 s: those from 89.999 s on remain
	if len(o.sent) != 10_001 || len(o.order) != 10_001 {
		t.Errorf("%d offers known (%d in order), want the 10,001 of the last %s", len(o.sent), len(o.order), keep)
	}
	if _, ok := o.when("89998"); ok {
		t.Error("an offer older than keep is still known")
	}
	if at, ok := o.when("89999"); !ok || !at.Equal(start.Add(89_999*time.Millisecond)) {
		t.Errorf("the oldest offer within keep: %v, %v", at, ok)
	}
	if at, ok := o.when("99999"); !ok || !at.Equal(start.Add(99_999*time.Millisecond)) {
		t.Errorf("the newest offer: %v, %v", at, ok)
	}
}

// TestOffersAfterTheClockStepsBack: Options.Clock need not be monotonic.
// An offer made at a time the clock then steps back from (an hour ahead
// here) must not stop the forgetting of those behind it: the record holds
// keep's worth of claims, not every claim since.
func TestOffersAfterTheClockStepsBack(t *testing.T) {
	o := newOffers()
	start := time.Unix(1_700_000_000, 0)
	const keep = 10 * time.Second
	o.made("ahead", start.Add(time.Hour), keep) // the clock then steps back an hour
	for i := range 100_000 {
		o.made(fmt.Sprint(i), start.Add(time.Duration(i)*time.Millisecond), keep)
	}
	if _, ok := o.when("0"); ok {
		t.Errorf("offer 0, made 100 s before the last claim (keep %s), is still known", keep)
	}
	if len(o.sent) > 10_002 || len(o.order) > 10_002 {
		t.Errorf("%d offers known (%d queued) after 100,000 claims, want at most 10,002: forgetting stopped at the head", len(o.sent), len(o.order))
	}
}
