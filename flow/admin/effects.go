package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// ErrNoDeadEffect: no dead-lettered effect has this ID.
var ErrNoDeadEffect = sluicetype.ErrNoDeadEffect

// ErrNoEffectToRelay: a dead-lettered entry DeadEffects lists holds no
// effect to send back (a parent's notification, or an unreadable entry).
var ErrNoEffectToRelay = sluicetype.ErrNoEffectToRelay

// DeadEffects lists up to limit (1 to MaxListLimit; 0: 100) dead-lettered
// effects of queue, partition by partition, oldest first in each. One
// that names its job is also in that job's Errors (class "effect_dead").
func (c *Client) DeadEffects(ctx context.Context, queue string, limit int) ([]sluicetype.DeadEffect, error) {
	if !runtime.ValidQueue(queue) {
		return nil, fmt.Errorf("%w: queue %q", flow.ErrInvalid, queue)
	}
	if limit < 0 || limit > MaxListLimit {
		return nil, fmt.Errorf("%w: limit %d not in 1..%d", flow.ErrInvalid, limit, MaxListLimit)
	}
	if limit == 0 {
		limit = 100
	}
	parts, err := c.b.Partitions(ctx, queue)
	if err != nil {
		return nil, err
	}
	var out []sluicetype.DeadEffect
	for _, p := range parts {
		ds, err := c.b.Store.DeadEffects(ctx, p, "", limit-len(out))
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			out = append(out, d.Public(p))
		}
		if len(out) >= limit {
			break
		}
	}
	return out, nil
}

// RedriveEffects sends dead-lettered effects back to be relayed again, by
// the IDs DeadEffects gives (at least one, else ErrInvalid). The relay applies each once at most (its
// dedup marker stands); one that still cannot apply is dead-lettered
// again. The error joins one error per ID that failed: ErrInvalid for a
// malformed ID, ErrNoDeadEffect for one that is not there,
// ErrNoEffectToRelay for one that holds no effect, ErrLayoutMismatch for
// one of a partition a shrink retired (no worker relays it: resize the
// queue back to a count that includes it first), and the call's error
// for each ID of a partition whose call failed (the other partitions are
// still sent theirs).
func (c *Client) RedriveEffects(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return fmt.Errorf("%w: no dead effect IDs given", flow.ErrInvalid)
	}
	ids = distinct(ids) // one ID given twice is one effect: the limit counts effects, as Redrive's counts jobs
	if len(ids) > MaxRedriveIDs {
		return fmt.Errorf("%w: %d dead effects, at most %d", ErrTooMany, len(ids), MaxRedriveIDs)
	}
	byPart := map[keys.Partition][]string{}
	names := map[keys.Partition][]string{} // the IDs as given, for errors
	var errs []error
	for _, id := range ids {
		ref, err := c.ref(id)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: dead effect ID %q", flow.ErrInvalid, id))
			continue
		}
		byPart[ref.Partition] = append(byPart[ref.Partition], ref.Local)
		names[ref.Partition] = append(names[ref.Partition], id)
	}
	parts := make([]keys.Partition, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	slices.SortFunc(parts, func(a, b keys.Partition) int { return a.Index - b.Index })
	for _, p := range parts {
		res, err := c.b.Store.ReviveEffects(ctx, p, byPart[p])
		if err != nil { // this partition's IDs only
			for _, id := range names[p] {
				errs = append(errs, fmt.Errorf("dead effect %s: %w", id, err))
			}
			continue
		}
		for i, e := range res {
			switch {
			case errors.Is(e, ErrNoDeadEffect):
				errs = append(errs, fmt.Errorf("%w: %s", ErrNoDeadEffect, names[p][i]))
			case e != nil:
				errs = append(errs, fmt.Errorf("dead effect %s: %w", names[p][i], e))
			}
		}
	}
	return errors.Join(errs...)
}
