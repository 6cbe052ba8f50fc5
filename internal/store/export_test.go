package store

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// CheckpointUnchecked writes one checkpoint whose direct effects go to
// the script as given, without Go's validation (validateEffect), so that
// tests reach the checks lua/lib_effects.lua must make on its own. It
// returns the script's status and detail (ok and 0 for step.lua's answer
// that all applied and nothing went to the outbox).
func (s *Store) CheckpointUnchecked(ctx context.Context, p keys.Partition, c Checkpoint) (string, any, error) {
	fields := newArgList(0)
	c.pack(fields)
	args := []any{1, fields.done(), ""}
	if len(c.Effects) > 0 {
		args = append(args[:2], "1", len(c.Effects))
	}
	for _, e := range c.Effects {
		args = append(args, "d", e.Op, e.Key, len(e.Args))
		for _, a := range e.Args {
			args = append(args, a)
		}
	}
	v, err := s.run(ctx, lua.Step, p, args...).Result()
	if err != nil {
		return "", nil, err
	}
	if v == int64(0) { // every checkpoint applied, nothing outboxed
		return statusOK, int64(0), nil
	}
	list, _ := v.([]any)
	if len(list) == 0 {
		return "", nil, fmt.Errorf("%w: step reply %v", ErrMalformed, v)
	}
	pair, _ := list[0].([]any)
	status, _ := pair[0].(string)
	return status, pair[1], nil
}

// MaxCallBytes is maxCallBytes, for tests that cross it.
const MaxCallBytes = maxCallBytes

// ScoresRedisTakes and ScoresRedisRefuses are ZADD scores as Redis 7.0's
// ZADD answered each (C's strtod, whole, with no overflow, no underflow
// and no NaN): Go's isScore and Lua's score_ok are held to both.
var (
	ScoresRedisTakes = []string{"1", "+5", "-0", "00012", "5.", ".5", "1.e2", "1e5", "1E+5", "+.5e-3", "1e-310",
		"inf", "INF", "-inf", "-Infinity", "+INFINITY",
		"0x10", "0x1.8", "0x1.p0", "0x1p0", "0X1P-2", "0x1P+2", "0x.8", "0x.8p1", "0x1e", "0xEp1",
		"0x0p5", "0x0.0p-3000", "0x1P-1074", "0e400", "5e-324", "3e-324", "100e-325", "-0.0000e-99999",
		"10000000000000000000", "12345678901234567890e0"}
	ScoresRedisRefuses = []string{"", "+", ".", "5e", "1e+", "1e5 ", " 1", "1.5e3.2", "+-1", "-+1", "nan", "NaN", "infinit",
		"1_000", "1_0.5", "0x_1p0", "0x1_0", "1e1_0", "0b1", "0o7", "00x1",
		"0x", "0x.p1", "0x1p", "0x1p+", "1e-400", "-1e400", "0x1p1024", "-0x1p-1100", "0xep-2000",
		"2e-324", "0x-22", "0x+a", "1e309"}
)
