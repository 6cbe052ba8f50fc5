package checkpoint

import (
	"strconv"
	"strings"
	"time"
)

// A job's timers are kept in its hash, and the signals sent to it in its
// steps hash beside its checkpoints (lua/lib_waits.lua), under fields no
// step name can take ('!' is in none); a claim hands both out as the
// job's steps.
const (
	// TimerPrefix starts a timer's field; its value is its wake time (unix ms).
	TimerPrefix = "!t:"
	// SignalPrefix starts a signal's field: then its sequence number (10
	// digits), ':' and its name; its value is its payload.
	SignalPrefix = "!s:"
)

// IsStep reports whether field holds a step's checkpoint: not a cursor's
// progress, a timer or a signal.
func IsStep(field string) bool { return !IsCursor(field) && !strings.HasPrefix(field, "!") }

// Timer reads a timer's field and value: its name and wake time.
func Timer(field string, value []byte) (name string, wake time.Time, ok bool) {
	name, ok = strings.CutPrefix(field, TimerPrefix)
	if !ok {
		return "", time.Time{}, false
	}
	ms, err := strconv.ParseInt(string(value), 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	return name, time.UnixMilli(ms), true
}

// Signal reads a signal's field: its sequence number and name. A field
// not laid out as lua/lib_waits.lua writes it (ten digits: not a sign)
// is none, as the scripts read it (signal_name).
func Signal(field string) (seq int64, name string, ok bool) {
	rest, ok := strings.CutPrefix(field, SignalPrefix)
	if !ok || len(rest) < 12 || rest[10] != ':' {
		return 0, "", false
	}
	for i := range 10 {
		if rest[i] < '0' || rest[i] > '9' {
			return 0, "", false
		}
	}
	seq, err := strconv.ParseInt(rest[:10], 10, 64)
	if err != nil {
		return 0, "", false
	}
	return seq, rest[11:], true
}
