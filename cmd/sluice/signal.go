package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// jobsSignalCmd sends a signal to a job. The JSON payload is sent
// msgpack-encoded, as a map for an object: the wait decodes it into its
// type by field names, as msgpack does.
func (c *cli) jobsSignalCmd() *cobra.Command {
	var data, key, created string
	var discard bool
	var seq int64
	cmd := &cobra.Command{
		Use:   "signal ID NAME",
		Short: "Send a signal to a workflow job, or discard one kept for it",
		Example: `  sluice jobs signal orders:0:42 approved --data '{"By":"ann"}' --key approval-42
  sluice jobs signal orders:0:42 approved --created '2026-12-02 13:03:49.715'   # not to a job given the ID since
  sluice jobs signal orders:0:42 approved --discard   # a payload its wait cannot decode (bad_signal); then redrive it
  sluice jobs signal orders:0:42 approved --discard --seq 3 --created '2026-12-02 13:03:49.715'
      # only if #3 of the job 'sluice jobs show' showed (its Created) is still the next`,
		Args: nArgs("ID", "NAME"),
	}
	cmd.Flags().StringVar(&data, "data", "", "the signal's payload, as `JSON` (default: none)")
	cmd.Flags().StringVar(&key, "key", "", "an idempotency key `K`: a signal with the key of one sent to the job before is not kept again")
	cmd.Flags().BoolVar(&discard, "discard", false, "discard the next signal NAME sent to the job and not yet taken (the one its wait takes next), instead of sending one; not for a running or completed job")
	cmd.Flags().Int64Var(&seq, "seq", 0, "with --discard and --created: discard only if signal number `N` is still the next one NAME kept (one a wait took since is not followed by the next)")
	cmd.Flags().StringVar(&created, "created", "", "only if the job is the one created at `TIME`, as 'jobs show' prints it (UTC) or --json does, not a job given its ID since (which, for --discard, numbers its signals from 1 again); required with --seq")
	cmd.RunE = c.runE(func(cmd *cobra.Command, args []string) error {
		id, name := args[0], args[1]
		if discard {
			if cmd.Flags().Changed("data") || cmd.Flags().Changed("key") {
				return usagef("--discard sends nothing: it takes no --data or --key")
			}
			if cmd.Flags().Changed("seq") && seq < 1 {
				return usagef("--seq %d: signal numbers start at 1", seq)
			}
			var at *createdTime
			if cmd.Flags().Changed("created") {
				t, err := parseCreated(created)
				if err != nil {
					return usagef("--created: %v", err)
				}
				at = &t
			} else if cmd.Flags().Changed("seq") {
				// a job given the ID since numbers its signals from 1
				// again: #N alone may be the new job's, not the one seen
				return usagef("--seq needs --created, the job's creation time as 'sluice jobs show %s' prints it: signal #%d of a job given its ID since is another signal", id, seq)
			}
			return c.discardSignal(cmd, id, name, seq, at)
		}
		if cmd.Flags().Changed("seq") {
			return usagef("--seq names a kept signal to discard: it goes with --discard")
		}
		var at *createdTime
		if cmd.Flags().Changed("created") {
			t, err := parseCreated(created)
			if err != nil {
				return usagef("--created: %v", err)
			}
			at = &t
		}
		var payload any
		// given, --data must be JSON: an empty value (an unset variable)
		// is none, not "no payload", which woke the workflow with a zero
		// value and said "sent"
		if cmd.Flags().Changed("data") {
			var err error
			if payload, err = signalData(data); err != nil {
				return usagef("--data: %v", err)
			}
		}
		var opts []flow.SignalOption
		if cmd.Flags().Changed("key") {
			if key == "" { // an unset variable: the retry it should make safe would keep the signal twice
				return usagef("--key is empty: give the idempotency key, or leave the flag out")
			}
			opts = append(opts, flow.WithSignalKey(key))
		}
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		var res admin.SignalResult
		if at != nil {
			// the creation time checked in the signal's own call: a job
			// given the ID after the operator looked is sent nothing
			from := at.t.Truncate(at.prec)
			res, err = client.SignalOf(cmd.Context(), id, name, payload, from, from.Add(at.prec), opts...)
			var other *admin.OtherJobError
			if errors.As(err, &other) {
				return fmt.Errorf("%w: job %s is another job than the one created %s (its ID was given to a new one, created %s): nothing sent; look at it first (sluice jobs show %s)",
					admin.ErrWrongState, id, at.given, when(other.Created), id)
			}
		} else {
			res, err = client.Signal(cmd.Context(), id, name, payload, opts...)
		}
		if err != nil {
			return c.about("job", id, err)
		}
		result := "sent"
		if res.Duplicate {
			result = "duplicate"
		}
		// a job asleep on other signals is not woken by this one (kept
		// for a later step): say so, a misspelt name is not a success
		var others []string
		asleep := false // suspended on timers alone (step.Sleep): not woken either
		if j, err := client.Job(cmd.Context(), id); err == nil && j.Suspended && !slices.Contains(j.AwaitingSignals, name) {
			if len(j.AwaitingSignals) > 0 {
				others = j.AwaitingSignals
			} else {
				asleep = true
			}
		}
		if c.json {
			out := map[string]any{"id": id, "signal": name, "result": result}
			if others != nil || asleep {
				out["awaiting"] = append([]string{}, others...)
			}
			return writeJSON(c.stdout, out)
		}
		if res.Duplicate {
			fmt.Fprintf(c.stdout, "signal %s to %s not sent again: one with key %q was sent before\n", name, id, key)
		} else {
			fmt.Fprintf(c.stdout, "sent signal %s to %s\n", name, id)
		}
		if others != nil {
			fmt.Fprintf(c.stderr, "note: %s sleeps waiting for %s, not %s: it was not woken (the signal is kept for a later step that waits for it)\n",
				id, strings.Join(others, ", "), name)
		} else if asleep {
			fmt.Fprintf(c.stderr, "note: %s sleeps on a timer and waits for no signal: it was not woken (the signal is kept for a later step that waits for it)\n", id)
		}
		return nil
	})
	return cmd
}

// discardSignal discards the next signal name kept for job id (only if
// it is number seq, when seq > 0) and says what it was; none kept, or
// another than seq next, is not found (exit 3): a misspelt name is not a
// success. Given created, a job created at another time (a new job given
// the ID) is refused (exit 1), nothing discarded.
func (c *cli) discardSignal(cmd *cobra.Command, id, name string, seq int64, created *createdTime) error {
	client, err := c.connect(cmd.Context())
	if err != nil {
		return err
	}
	var sg flow.SignalInfo
	var other *admin.OtherJobError
	switch {
	case created != nil:
		// the creation time checked in the discard's own call: a job
		// given the ID after a read of it would lose its signal
		from := created.t.Truncate(created.prec)
		sg, err = client.DiscardSignalOf(cmd.Context(), id, name, seq, from, from.Add(created.prec))
		if errors.As(err, &other) {
			return fmt.Errorf("%w: job %s is another job than the one created %s (its ID was given to a new one, created %s): nothing discarded; look at it first (sluice jobs show %s)",
				admin.ErrWrongState, id, created.given, when(other.Created), id)
		}
	case seq > 0:
		sg, err = client.DiscardSignalSeq(cmd.Context(), id, name, seq)
	default:
		sg, err = client.DiscardSignal(cmd.Context(), id, name)
	}
	if errors.Is(err, admin.ErrSignalNotFound) {
		if seq > 0 {
			return missingError{strings.TrimPrefix(err.Error(), admin.ErrSignalNotFound.Error()+": ")}
		}
		return missingError{fmt.Sprintf("job %s has no signal %s kept (sent and not yet taken): nothing discarded", id, name)}
	}
	if err != nil {
		return c.about("job", id, err)
	}
	if c.json {
		return writeJSON(c.stdout, map[string]any{"id": id, "signal": name, "result": "discarded", "seq": sg.Seq,
			"data": decoded(sg.Payload)})
	}
	fmt.Fprintf(c.stdout, "discarded signal %s #%d of %s: %s\n", name, sg.Seq, id, compact(decoded(sg.Payload)))
	return nil
}

// createdTime is a job's creation time as an operator gives it, to the
// precision given: 'jobs show' prints milliseconds.
type createdTime struct {
	t     time.Time
	prec  time.Duration
	given string
}

// parseCreated reads a creation time as 'jobs show' prints it (UTC,
// timeLayout) or as --json does (RFC 3339).
func parseCreated(s string) (createdTime, error) {
	t, err := time.ParseInLocation(timeLayout, s, time.UTC)
	if err != nil {
		if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return createdTime{}, fmt.Errorf("%q is not a time as 'sluice jobs show' prints it (%s, UTC) or RFC 3339", s, timeLayout)
		}
	}
	prec := time.Second
	if _, frac, ok := strings.Cut(s, "."); ok {
		digits := len(frac) - len(strings.TrimLeft(frac, "0123456789"))
		for i := 0; i < digits && prec > time.Nanosecond; i++ {
			prec /= 10
		}
	}
	return createdTime{t: t, prec: prec, given: s}, nil
}

// signalData decodes a signal's JSON payload for msgpack: a whole number
// as an integer (int64, else uint64), written with a fraction or an
// exponent too ("1.0", "1e3"), any other as a float. Decoded as
// JSON's float64, every number went as a msgpack double, which a wait
// into an integer field cannot read (its job archived, bad_signal), and
// an integer beyond 2^53 lost its last digits.
func signalData(data string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not JSON: more than one value")
	}
	return numbers(v)
}

// numbers replaces each json.Number in v as signalData says.
func numbers(v any) (any, error) {
	var err error
	switch t := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return n, nil
		}
		if n, err := strconv.ParseUint(string(t), 10, 64); err == nil {
			return n, nil
		}
		f, err := t.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s is out of range", t)
		}
		if n, ok := wholeNumber(string(t), f); ok {
			return n, nil
		}
		return f, nil
	case map[string]any:
		for k, e := range t {
			if t[k], err = numbers(e); err != nil {
				return nil, err
			}
		}
	case []any:
		for i, e := range t {
			if t[i], err = numbers(e); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// wholeNumber is the integer that number s, a float f, writes with a
// fraction or an exponent, exactly, when it is one of 64 bits. f bounds
// the work: s is read exactly (its exponent may be of any size) only when
// f is a whole number under 2^64, or zero.
func wholeNumber(s string, f float64) (any, bool) {
	if f == 0 { // zero, or a fraction too small for a float
		mant, _, _ := strings.Cut(strings.ToLower(strings.TrimLeft(s, "-")), "e")
		return int64(0), strings.Trim(mant, "0.") == ""
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<64 {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	switch {
	case !ok || !r.IsInt():
		return nil, false
	case r.Num().IsInt64():
		return r.Num().Int64(), true
	case r.Num().IsUint64():
		return r.Num().Uint64(), true
	}
	return nil, false
}
