package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/msgview"
	"github.com/sluicehq/sluice/sluicetype"
)

// discardAction discards the next signal of one name kept for a job (sent
// and not yet taken by a wait), admin.Client.DiscardSignalOf: the remedy of
// a job parked bad_signal, whose wait cannot decode that payload. Its
// confirmation shows the signal, records its sequence number (a signal
// taken or discarded since is not followed by the next one of the name)
// and carries a key that runs it once however often its form is posted
// (a double click discarded two signals). Its message names the signal
// and its payload, to send it again corrected.
var discardAction = action{Title: "Discard signal", Target: "id", Danger: true, Once: true, Fields: []string{"signal", "seq", "once", "created"},
	What: "The signal, sent to the job and not yet taken by a wait, is deleted: a wait of its name takes the next one sent. " +
		"A job parked bad_signal then needs a redrive. A signal sent with a key keeps its key used: send a corrected one with another key.",
	run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
		id, name := f.Get("id"), f.Get("signal")
		// the job the confirmation showed: a new one given its ID since
		// numbers its signals from 1 again, and would lose its own
		if err := c.unchanged(ctx, f); err != nil {
			return "", "", err
		}
		kept, err := c.keptSignal(ctx, id, name, f.Get("seq"))
		if err != nil {
			return "", "", err
		}
		// that signal only: one a wait takes meanwhile is not followed
		// by the next of its name; and of the job created when the page
		// showed it, checked again in the discard's own call (a job given
		// the ID after the reads above would lose its own), an
		// *admin.OtherJobError (ErrWrongState) otherwise
		var sg flow.SignalInfo
		if created := f.Get("created"); created == "" {
			sg, err = c.ops.DiscardSignalSeq(ctx, id, name, kept.Seq)
		} else if ns, perr := strconv.ParseInt(created, 10, 64); perr != nil {
			return "", "", fmt.Errorf("%w: the job's creation time %q is no time", flow.ErrInvalid, created)
		} else {
			at := time.Unix(0, ns)
			sg, err = c.ops.DiscardSignalOf(ctx, id, name, kept.Seq, at, at.Add(time.Millisecond))
		}
		if errors.Is(err, admin.ErrSignalNotFound) {
			// taken since the check above: the check, made again, says
			// why as it would have (409 for another next, 404 for none)
			if _, again := c.keptSignal(ctx, id, name, strconv.FormatInt(kept.Seq, 10)); again != nil {
				return "", "", again
			}
		}
		if err != nil {
			return "", "", discardError(id, name, err)
		}
		return fmt.Sprintf("discarded signal %s #%d of %s; its payload: %s", name, sg.Seq, id, c.flashPayload(sg.Payload)), jobPath(id), nil
	}}

// keptSignal returns the signal name that job id keeps next (the one a
// wait takes, and DiscardSignal discards): an error when it keeps none,
// when its state refuses a discard, or, seq given, when that is no longer
// the signal the confirmation showed.
func (c *console) keptSignal(ctx context.Context, id, name, seq string) (flow.SignalInfo, error) {
	if name == "" {
		return flow.SignalInfo{}, fmt.Errorf("%w: discard-signal names no signal", flow.ErrInvalid)
	}
	var want int64
	if seq != "" {
		n, err := strconv.ParseInt(seq, 10, 64)
		if err != nil || n <= 0 {
			return flow.SignalInfo{}, fmt.Errorf("%w: signal number %q is not a positive integer", flow.ErrInvalid, seq)
		}
		want = n
	}
	j, err := c.ops.Job(ctx, id)
	if err != nil {
		return flow.SignalInfo{}, err
	}
	if !signalsDiscardable(j.State) {
		return flow.SignalInfo{}, discardError(id, name, &sluicetype.StateError{ID: id, State: j.State})
	}
	for _, sg := range j.Signals {
		if sg.Name != name {
			continue
		}
		if want != 0 && sg.Seq < want { // one before it is kept still (a number no page showed)
			return flow.SignalInfo{}, fmt.Errorf("%w: signal %s #%d of job %s is not the next one kept (#%d comes first): look at the job first",
				admin.ErrWrongState, name, want, id, sg.Seq)
		}
		if want != 0 && sg.Seq != want {
			return flow.SignalInfo{}, fmt.Errorf("%w: signal %s #%d of job %s is no longer the next one kept (a wait took it, or it was discarded, since this page was shown; the next is #%d): look at the job first",
				admin.ErrWrongState, name, want, id, sg.Seq)
		}
		return sg, nil
	}
	since := ""
	if want != 0 {
		since = fmt.Sprintf(" (#%d was taken by a wait, or discarded, since this page was shown, or never sent)", want)
	}
	return flow.SignalInfo{}, fmt.Errorf("%w: job %s keeps no signal %s (sent and not yet taken)%s: nothing discarded", admin.ErrSignalNotFound, id, name, since)
}

// signalsDiscardable reports whether a job in state may have a signal
// discarded (admin.Client.DiscardSignal refuses the others): not while
// an attempt runs, which may be taking it, nor once it completed.
func signalsDiscardable(state string) bool {
	return state != flow.StateRunning && state != flow.StateCompleted
}

// discardError says why job id's signal name was not discarded: a state
// refusal (a *sluicetype.StateError) says why that state refuses.
func discardError(id, name string, err error) error {
	var se *sluicetype.StateError
	if !errors.As(err, &se) {
		return err
	}
	why := "it never waits again: nothing of it takes a signal"
	if se.State == flow.StateRunning {
		why = "its attempt may be taking it: wait for the attempt to end, or cancel it"
	}
	return &sluicetype.StateError{ID: id, Op: "discard signal " + name + " of", State: se.State, Why: why}
}

// discardable are the signals of job j the job page offers to discard:
// the first kept of each name (the one a wait takes next, which
// DiscardSignal discards), by sequence number; none when its state
// refuses a discard.
func discardable(j *flow.JobInfo) map[int64]bool {
	if !signalsDiscardable(j.State) || len(j.Signals) == 0 {
		return nil
	}
	first, seen := map[int64]bool{}, map[string]bool{}
	for _, sg := range j.Signals {
		if !seen[sg.Name] {
			seen[sg.Name], first[sg.Seq] = true, true
		}
	}
	return first
}

// maxFlashPayload bounds the payload a flash message shows: the message
// travels in a cookie, which a browser drops past 4 KB.
const maxFlashPayload = 1500

// flashPayload is a signal's payload as one line of JSON for a flash
// message (the page escapes it), cut to maxFlashPayload bytes; hidden
// with Options.HideArgs.
func (c *console) flashPayload(b []byte) string {
	if c.o.HideArgs {
		return "hidden (hide-args)"
	}
	if len(b) == 0 {
		return "none"
	}
	s := ""
	v, err := msgview.Decode(b)
	switch {
	case errors.Is(err, msgview.ErrTooDeep):
		s = fmt.Sprintf("(%d bytes of msgpack nested more than %d levels deep, not decoded)", len(b), msgview.MaxDepth)
	case err != nil:
		s = fmt.Sprintf("(%d bytes, not msgpack: %v)", len(b), err)
	default:
		// as it was sent: the page escapes it, JSON need not (<, >, &)
		var out strings.Builder
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			s = fmt.Sprintf("%v", v)
		} else {
			s = strings.TrimSuffix(out.String(), "\n")
		}
	}
	if len(s) > maxFlashPayload {
		s = fmt.Sprintf("%s … (%d bytes in all, cut here: its confirmation page showed it whole)",
			strings.ToValidUTF8(s[:maxFlashPayload], ""), len(s))
	}
	return s
}
