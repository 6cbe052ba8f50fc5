package main

import (
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestSignalDataKeepsIntegers: `jobs signal --data` with numbers. JSON's
// numbers were decoded as float64 and sent as msgpack doubles, which a
// wait into an integer field cannot read: the workflow the signal was to
// wake was archived (bad_signal) while the command said "sent", and an
// integer beyond 2^53 lost its last digits (found by an audit). A whole
// number now goes as an integer, and the payload reads back exactly.
func TestSignalDataKeepsIntegers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.suspended("w1", "approved")
	if out, errOut, code := f.sluice("jobs", "signal", "default:0:w1", "approved", "--data",
		`{"OrderID": 9007199254740993, "Amount": 12, "Rate": 1.5, "Big": 18446744073709551615, "Tags": [-1, 2]}`); code != exitOK {
		t.Fatalf("signal: exit %d, %q%q", code, out, errOut)
	}
	j, err := f.c.Job(f.ctx, "default:0:w1")
	if err != nil || len(j.Signals) != 1 {
		t.Fatalf("job after the signal: %+v %v", j, err)
	}
	var got struct {
		OrderID int64
		Amount  int
		Rate    float64
		Big     uint64
		Tags    []int
	}
	if err := msgpack.Unmarshal(j.Signals[0].Payload, &got); err != nil {
		t.Fatalf("the kept signal does not decode into integer fields: %v", err)
	}
	if got.OrderID != 9007199254740993 || got.Amount != 12 || got.Rate != 1.5 || got.Big != 18446744073709551615 ||
		len(got.Tags) != 2 || got.Tags[0] != -1 || got.Tags[1] != 2 {
		t.Fatalf("the kept signal: %+v", got)
	}
}

// TestSignalDataRefusals: what --data cannot send is a usage error,
// nothing sent.
func TestSignalDataRefusals(t *testing.T) {
	t.Parallel()
	for _, data := range []string{"{", `{"a":1} {"b":2}`, `{"a": 1e999}`, `[1, -1e400]`} {
		if v, err := signalData(data); err == nil {
			t.Errorf("signalData(%q) = %v, want an error", data, v)
		}
	}
	if v, err := signalData(`"text"`); err != nil || v != "text" {
		t.Errorf(`signalData("text"): %v %v`, v, err)
	}
}

// TestSignalDataWholeNumbers: a whole number written with a fraction or
// an exponent goes as an integer too (a review found "1e3" and "1.0" still
// sent as doubles, which an integer field cannot read), exactly; any other
// number as a float, and a fraction too small for a float stays one.
func TestSignalDataWholeNumbers(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]any{
		"1e3": int64(1000), "1E2": int64(100), "1.0": int64(1), "100e-2": int64(1), "-2.50e1": int64(-25),
		"0.0": int64(0), "-0": int64(0), "0e99": int64(0), "9007199254740993.0": int64(9007199254740993),
		"1.8446744073709551615e19": uint64(18446744073709551615),
		"1.5":                      1.5, "1e-999": 0.0, "9007199254740993.5": 9007199254740994.0, "1e20": 1e20,
	} {
		got, err := signalData(in)
		if err != nil || got != want {
			t.Errorf("signalData(%s) = %#v, %v; want %#v", in, got, err, want)
		}
	}
}

// TestSignalDiscard: `jobs signal ID NAME --discard` discards the next
// kept signal of that name (exit 0, saying which and its payload, so it
// can be sent again corrected), the later one kept; with none kept it
// says so and exits 3; with --data it is a usage error.
func TestSignalDiscard(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.suspended("w1", "approved")
	for _, data := range []string{`"first"`, `"second"`} {
		if out, errOut, code := f.sluice("jobs", "signal", "default:0:w1", "later", "--data", data); code != exitOK {
			t.Fatalf("signal: exit %d, %q%q", code, out, errOut)
		}
	}
	if out, _, code := f.sluice("jobs", "signal", "default:0:w1", "later", "--discard"); code != exitOK || out != "discarded signal later #1 of default:0:w1: \"first\"\n" {
		t.Fatalf("discard: exit %d, %q", code, out)
	}
	if j, err := f.c.Job(f.ctx, "default:0:w1"); err != nil || len(j.Signals) != 1 || j.Signals[0].Seq != 2 {
		t.Fatalf("job after the discard: %+v %v, want the second signal kept", j, err)
	}
	if out, _, code := f.sluice("jobs", "signal", "default:0:w1", "later", "--discard"); code != exitOK || !strings.Contains(out, "#2") {
		t.Fatalf("discard again: exit %d, %q", code, out)
	}
	if _, errOut, code := f.sluice("jobs", "signal", "default:0:w1", "later", "--discard"); code != exitNotFound || !strings.Contains(errOut, "no signal later kept") {
		t.Fatalf("discard with none kept: exit %d, %q; want %d saying none is kept", code, errOut, exitNotFound)
	}
	if _, _, code := f.sluice("jobs", "signal", "default:0:w1", "later", "--discard", "--data", `"x"`); code != exitUsage {
		t.Fatalf("discard with --data: exit %d, want %d", code, exitUsage)
	}
	// --seq: that signal only, if it is still the next one kept
	for _, data := range []string{`"third"`, `"fourth"`} {
		if out, errOut, code := f.sluice("jobs", "signal", "default:0:w1", "later", "--data", data); code != exitOK {
			t.Fatalf("signal: exit %d, %q%q", code, out, errOut)
		}
	}
	if _, errOut, code := f.sluice("jobs", "signal", "default:0:w1", "later", "--discard", "--seq", "4", "--created", f.created("default:0:w1")); code != exitNotFound ||
		!strings.Contains(errOut, "not the next one kept") || !strings.Contains(errOut, "#3 comes first") {
		t.Fatalf("discard --seq 4 behind #3: exit %d, %q; want %d naming #3", code, errOut, exitNotFound)
	}
	if out, _, code := f.sluice("jobs", "signal", "default:0:w1", "later", "--discard", "--seq", "3", "--created", f.created("default:0:w1")); code != exitOK || out != "discarded signal later #3 of default:0:w1: \"third\"\n" {
		t.Fatalf("discard --seq 3: exit %d, %q", code, out)
	}
	if j, err := f.c.Job(f.ctx, "default:0:w1"); err != nil || len(j.Signals) != 1 || j.Signals[0].Seq != 4 {
		t.Fatalf("job after the discards by number: %+v %v, want #4 kept", j, err)
	}
	for _, args := range [][]string{{"--discard", "--seq", "0"}, {"--seq", "4"}} {
		if _, _, code := f.sluice(append([]string{"jobs", "signal", "default:0:w1", "later"}, args...)...); code != exitUsage {
			t.Fatalf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// TestDiscardSeqAheadMessage: `jobs signal ID NAME --discard --seq N`
// where #N is still kept but behind the next one refuses, and says that
// #1 comes first, not that #N "was taken by a wait, or discarded" (it is
// still kept): that is said only of a number below the next kept.
func TestDiscardSeqAheadMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.suspended("w1", "approved")
	for _, data := range []string{`"first"`, `"second"`} {
		if out, errOut, code := f.sluice("jobs", "signal", "default:0:w1", "later", "--data", data); code != exitOK {
			t.Fatalf("signal: exit %d, %q%q", code, out, errOut)
		}
	}
	// #2 is kept, behind #1
	_, errOut, code := f.sluice("jobs", "signal", "default:0:w1", "later", "--discard", "--seq", "2", "--created", f.created("default:0:w1"))
	if code != exitNotFound {
		t.Fatalf("discard --seq 2 behind #1: exit %d, want %d", code, exitNotFound)
	}
	if strings.Contains(errOut, "a wait took it") || !strings.Contains(errOut, "#1 comes first") {
		t.Errorf("discard --seq 2 while #2 is still kept behind #1: %q, want it to say #1 comes first", errOut)
	}
}
