package step_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/flow/flowtest"
	"github.com/sluicehq/sluice/step"
)

type badSignalled struct{}

func (badSignalled) Kind() string { return "bad-signalled" }

// TestBadSignalSetAside: a signal whose payload does not decode into the
// type its wait asks for parks the job (bad_signal) and is set aside, its
// payload kept: once the sender is mended, a good signal and a redrive
// take the job past the wait. A helper's audit found the bad signal kept
// as a signal: the wait took it again after every redrive and parked
// again, and nothing in the API could remove it.
func TestBadSignalSetAside(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	if err := flow.RegisterResult(reg, func(ctx context.Context, _ *flow.Job[badSignalled]) (string, error) {
		d, ok, err := step.WaitSignal[decision](ctx, "decision", 0)
		if err != nil || !ok {
			return "", err
		}
		return d.By, nil
	}); err != nil {
		t.Fatal(err)
	}
	h := flowtest.New(t, reg)
	ctx := context.Background()
	j := h.Run(badSignalled{}).Job
	if err := h.Client.Signal(ctx, j.ID, "decision", "not a decision"); err != nil {
		t.Fatal(err)
	}
	j = h.Resume(j.ID, 10*time.Second).Job
	if j.State != flow.StateArchived || j.Reason != "bad_signal" || !strings.Contains(j.LastError, "set aside") || len(j.Signals) != 0 {
		t.Fatalf("after the bad signal: %s (%s: %s), kept signals %+v; want archived, bad_signal, the signal set aside", j.State, j.Reason, j.LastError, j.Signals)
	}
	if _, err := admin.New(h.Client).Redrive(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.Client.Signal(ctx, j.ID, "decision", decision{OK: true, By: "carol"}); err != nil {
		t.Fatal(err)
	}
	j = h.Resume(j.ID, 10*time.Second).Job
	if j.State != flow.StateCompleted {
		t.Fatalf("after a good signal and a redrive: %s (%s: %s), kept signals %+v; want completed", j.State, j.Reason, j.LastError, j.Signals)
	}
	var by string
	if err := j.DecodeResult(&by); err != nil || by != "carol" {
		t.Fatalf("result %q, %v; want carol's decision", by, err)
	}
}
