package store_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
)

// TestAckMalformedDelay: an outcome whose delay is no number (a
// hand-made call: the store always sends one) fails the call before
// anything is written, as an unknown code does. Before, it raised part-way
// (the outcomes before it written, the state counters not), and then,
// once a plain completion's delay was left nil and defaulted to 0, it was
// taken as no delay: a mistake answered as fine.
func TestAckMalformedDelay(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "x"}, store.NewJob{Local: "y"})
			held := f.claimLeases(2, "w")
			b.rdb.AddHook(spoilDelay{})
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{
				{Lease: held["x"], Code: store.CodeOK},
				{Lease: held["y"], Code: store.CodeRetry, Delay: time.Minute, Message: "boom", Reason: "error"},
			})
			if err == nil || !strings.Contains(err.Error(), "malformed delay for job y") {
				t.Fatalf("ack with a delay of xxxxx: %v, want the delay refused", err)
			}
			for _, id := range []string{"x", "y"} {
				if j, _ := f.get(id); j.State != "running" || j.Attempt != 0 {
					t.Errorf("%s: %s, attempt %d after a refused call; want running, attempt 0", id, j.State, j.Attempt)
				}
			}
			if s := f.stats(); s["running"] != 2 {
				t.Errorf("state counts %v, want running 2", s)
			}
		})
	}
}

// spoilDelay rewrites, in an ack's packed outcomes, a delay of a minute
// ("60000", a fixstr) into "xxxxx", no number, of the same length.
type spoilDelay struct{}

func (spoilDelay) DialHook(next redis.DialHook) redis.DialHook { return next }

func (spoilDelay) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (spoilDelay) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) > 1 && lua.Ack.Is(cmd.Name(), fmt.Sprint(args[1])) {
			for i, a := range args {
				switch v := a.(type) {
				case []byte:
					args[i] = bytes.ReplaceAll(v, []byte("\xa560000"), []byte("\xa5xxxxx"))
				case string:
					args[i] = strings.ReplaceAll(v, "\xa560000", "\xa5xxxxx")
				}
			}
		}
		return next(ctx, cmd)
	}
}

// TestAckOutcomeCutShort: an outcome list that ends before its last
// outcome's fields do (a hand-made call: the store sends them all) fails
// the call before anything is written. The loop reads a plain
// completion's missing fields as their defaults; a list cut short must
// not be taken for one.
func TestAckOutcomeCutShort(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "x"}, store.NewJob{Local: "y"})
			held := f.claimLeases(2, "w")
			b.rdb.AddHook(cutOutcomes{})
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{
				{Lease: held["x"], Code: store.CodeOK},
				{Lease: held["y"], Code: store.CodeRetry, Delay: time.Minute, Message: "boom", Reason: "error"},
			})
			if err == nil || !strings.Contains(err.Error(), "malformed outcome for job y") {
				t.Fatalf("ack with its last field cut: %v, want the outcome refused", err)
			}
			for _, id := range []string{"x", "y"} {
				if j, _ := f.get(id); j.State != "running" || j.Attempt != 0 {
					t.Errorf("%s: %s, attempt %d after a refused call; want running, attempt 0", id, j.State, j.Attempt)
				}
			}
			if s := f.stats(); s["running"] != 2 {
				t.Errorf("state counts %v, want running 2", s)
			}
		})
	}
}

// cutOutcomes makes an ack's packed outcome list (msgpack array 32) one
// entry shorter by its count: the last outcome loses its last field.
type cutOutcomes struct{}

func (cutOutcomes) DialHook(next redis.DialHook) redis.DialHook { return next }

func (cutOutcomes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (cutOutcomes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) > 1 && lua.Ack.Is(cmd.Name(), fmt.Sprint(args[1])) {
			for i, a := range args {
				var v []byte
				switch a := a.(type) {
				case []byte:
					v = bytes.Clone(a)
				case string:
					v = []byte(a)
				}
				if len(v) >= 5 && v[0] == 0xdd {
					n := binary.BigEndian.Uint32(v[1:5])
					binary.BigEndian.PutUint32(v[1:5], n-1)
					args[i] = v
				}
			}
		}
		return next(ctx, cmd)
	}
}
