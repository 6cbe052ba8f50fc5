package harness

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
)

// plainValues is the memory scenario's yardstick: what Redis needs to hold
// each payload alone, as a string value (SET) under a key as long as a
// job's. Redis's own per-key cost and its allocator's size classes are in
// it, and no job system storing a value per job can go below it; the
// jobs' bytes beyond it are what Sluice adds.
type plainValues struct {
	BaselineBytes int64 `json:"baseline_bytes"`
	HeldBytes     int64 `json:"held_bytes"`
	// BytesPerValue is (HeldBytes - BaselineBytes) / Jobs, and
	// OverheadPerValue that less the payload.
	BytesPerValue    float64 `json:"bytes_per_value"`
	OverheadPerValue float64 `json:"overhead_bytes_per_value"`
}

// plainBatch is how many SETs go in one pipeline.
const plainBatch = 1000

// measurePlain stores cfg.Pending copies of payload as plain values in a
// fresh namespace, measures them and deletes them. The keys have the
// shape and length of the jobs' ({ns:default:partition}:j: and a
// 16-character ID) and spread over the same partitions' slots.
func measurePlain(ctx context.Context, t *target, cfg config, payload []byte) (pv plainValues, err error) {
	ns := sixCharNamespace("v")
	defer func() { err = errors.Join(err, t.deleteNamespace(context.WithoutCancel(ctx), ns)) }()
	if pv.BaselineBytes, err = t.settledMemory(ctx); err != nil {
		return pv, err
	}
	parts := max(t.partitions, 1)
	for start := 0; start < cfg.Pending; start += plainBatch {
		_, err := t.admin.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := start; i < min(start+plainBatch, cfg.Pending); i++ {
				part := keys.Partition{NS: ns, Queue: "default", Index: i % parts}
				p.Set(ctx, part.Job(fmt.Sprintf("%016x", i)), payload, 0)
			}
			return nil
		})
		if err != nil {
			return pv, fmt.Errorf("storing plain values: %w", err)
		}
	}
	if pv.HeldBytes, err = t.settledMemory(ctx); err != nil {
		return pv, err
	}
	pv.BytesPerValue = float64(pv.HeldBytes-pv.BaselineBytes) / float64(cfg.Pending)
	pv.OverheadPerValue = pv.BytesPerValue - float64(len(payload))
	return pv, nil
}
