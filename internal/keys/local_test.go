package keys

import (
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
