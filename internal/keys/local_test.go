package keys

import (
	"strings"
	"testing"
	"time"
)

func TestLocalTime(t *testing.T) {
	before := time.Now().Truncate(time.Millisecond)
	id := NewLocal()
	after := time.Now()
	got, ok := LocalTime(id)
	if !ok || got.Before(before) || got.After(after) {
		t.Fatalf("LocalTime(%q) = %v, %v; want a time in [%v, %v]", id, got, ok, before, after)
	}
	// a retried ID keeps its first part (store.retryTaken)
	if again, ok := LocalTime(id + "-" + NewLocal()[10:]); !ok || !again.Equal(got) {
		t.Errorf("suffixed ID: %v, %v; want %v", again, ok, got)
	}
	for _, bad := range []string{"", "short", "sched:daily:trigger:" + id, "0123456789ABCDEF", "0123456789abcdeu"} {
		if _, ok := LocalTime(bad); ok {
			t.Errorf("LocalTime(%q) decoded", bad)
		}
	}
}

// TestParseRefQueueName: a job ID whose queue part no queue can have is
// malformed (the CLI exits 2), not the ID of a job that does not exist
// (exit 3, found by an audit: 'ma il:0:x').
func TestParseRefQueueName(t *testing.T) {
	for _, id := range []string{"ma il:0:x", "-mail:0:x", ":0:x", "mail\x00:0:x", strings.Repeat("q", 65) + ":0:x"} {
		if r, ok := ParseRef("ns", id); ok {
			t.Errorf("ParseRef(%q) = %+v, want malformed", id, r)
		}
	}
	if r, ok := ParseRef("ns", "mail.v2_x-1:3:06h4"); !ok || r.Queue != "mail.v2_x-1" || r.Index != 3 || r.Local != "06h4" {
		t.Errorf("ParseRef of a valid ID: %+v %v", r, ok)
	}
}
