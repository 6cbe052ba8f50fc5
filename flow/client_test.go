package flow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
)

type email struct {
	To   string
	Body string
}

func (email) Kind() string { return "email" }

type badKind struct{}

func (badKind) Kind() string { return "" }

type spaceKind struct{}

func (spaceKind) Kind() string { return "has space" }

type unregistered struct{}

func (unregistered) Kind() string { return "unregistered" }

func newClient(t *testing.T, rdb redis.UniversalClient, reg *flow.Registry) (*flow.Client, string) {
	t.Helper()
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg, MaxPayload: 1024})
	if err != nil {
		t.Fatal(err)
	}
	return c, ns
}

// TestBadInput: bad input is a typed error and adds nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(context.Context, *flow.Job[email]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	c, _ := newClient(t, rdb, reg)
	cases := []struct {
		name string
		args flow.Args
		opts []flow.EnqueueOption
		want error
	}{
		{"empty kind", badKind{}, nil, flow.ErrInvalid},
		{"invalid kind", spaceKind{}, nil, flow.ErrInvalid},
		{"unregistered kind", unregistered{}, nil, flow.ErrUnknownKind},
		{"nil args", nil, nil, flow.ErrInvalid},
		{"oversized payload", email{Body: strings.Repeat("x", 2000)}, nil, flow.ErrPayloadTooLarge},
		{"negative delay", email{}, []flow.EnqueueOption{flow.WithDelay(-time.Second)}, flow.ErrInvalid},
		{"negative timeout", email{}, []flow.EnqueueOption{flow.WithTimeout(-time.Second)}, flow.ErrInvalid},
		{"zero max attempts", email{}, []flow.EnqueueOption{flow.WithMaxAttempts(0)}, flow.ErrInvalid},
		{"invalid queue name", email{}, []flow.EnqueueOption{flow.WithQueue("no spaces")}, flow.ErrInvalid},
		{"empty queue name", email{}, []flow.EnqueueOption{flow.WithQueue("")}, flow.ErrInvalid},
		{"empty ID", email{}, []flow.EnqueueOption{flow.WithID("")}, flow.ErrInvalid},
		{"ID with a space", email{}, []flow.EnqueueOption{flow.WithID("a b")}, flow.ErrInvalid},
		{"ID of invalid UTF-8", email{}, []flow.EnqueueOption{flow.WithID("order-\xff")}, flow.ErrInvalid},
		{"SentAs of an ID of invalid UTF-8", email{}, []flow.EnqueueOption{flow.SentAs("default:0:\xc3(")}, flow.ErrInvalid},
		{"priority out of range", email{}, []flow.EnqueueOption{flow.WithPriority(10)}, flow.ErrInvalid},
		{"empty partition key", email{}, []flow.EnqueueOption{flow.WithPartitionKey("")}, flow.ErrInvalid},
		{"oversized partition key", email{}, []flow.EnqueueOption{flow.WithPartitionKey(strings.Repeat("k", flow.MaxPartitionKeyLength+1))}, flow.ErrInvalid},
		{"SentAs of no job ID", email{}, []flow.EnqueueOption{flow.SentAs("nope")}, flow.ErrInvalid},
		{"SentAs of a negative partition", email{}, []flow.EnqueueOption{flow.SentAs("default:-1:x")}, flow.ErrInvalid},
		{"SentAs of a partition with a leading zero", email{}, []flow.EnqueueOption{flow.SentAs("default:00:x")}, flow.ErrInvalid},
		{"SentAs of a partition with a sign", email{}, []flow.EnqueueOption{flow.SentAs("default:+0:x")}, flow.ErrInvalid},
		{"SentAs of an ID with a space", email{}, []flow.EnqueueOption{flow.SentAs("default:0:a b")}, flow.ErrInvalid},
		{"SentAs of another queue", email{}, []flow.EnqueueOption{flow.SentAs("default:0:x"), flow.WithQueue("other")}, flow.ErrInvalid},
		{"SentAs of another queue than default", email{}, []flow.EnqueueOption{flow.WithQueue("default"), flow.SentAs("emails:0:x")}, flow.ErrInvalid},
		{"SentAs of a queue never used", email{}, []flow.EnqueueOption{flow.SentAs("newq:3:x")}, flow.ErrQueueNotFound},
		{"SentAs and another ID", email{}, []flow.EnqueueOption{flow.SentAs("default:0:x"), flow.WithID("y")}, flow.ErrInvalid},
		{"another ID and SentAs", email{}, []flow.EnqueueOption{flow.WithID("y"), flow.SentAs("default:0:x")}, flow.ErrInvalid},
		{"a queue name of a megabyte", email{}, []flow.EnqueueOption{flow.WithQueue(strings.Repeat("q", 1<<20))}, flow.ErrInvalid},
		{"a SentAs of a megabyte", email{}, []flow.EnqueueOption{flow.SentAs(strings.Repeat("q", 1<<20))}, flow.ErrInvalid},
		{"a unique key of a megabyte", email{}, []flow.EnqueueOption{flow.WithUnique(strings.Repeat("u", 1<<20), -1, flow.KeepExisting)}, flow.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Enqueue(context.Background(), tc.args, tc.opts...)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %.300v, want %v", err, tc.want)
			}
			if len(err.Error()) > 300 { // a refused input is not echoed whole
				t.Fatalf("an error of %d bytes: %.300s", len(err.Error()), err)
			}
		})
	}
	// A batch with one bad job adds none of them.
	_, err := c.EnqueueMany(context.Background(), flow.Item{Args: email{To: "ok"}}, flow.Item{Args: badKind{}})
	if !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("batch err = %v", err)
	}
	if keys := m.Keys(); len(keys) != 0 {
		t.Fatalf("bad input wrote %v", keys)
	}
	if _, err := c.Job(context.Background(), "not-an-id"); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("Job(bad id) = %v", err)
	}
	if _, err := c.Job(context.Background(), "default:0:nope"); !errors.Is(err, flow.ErrNotFound) {
		t.Fatalf("Job(unknown) = %v", err)
	}
}

// TestRegisterErrors: duplicate and invalid kinds fail at registration.
func TestRegisterErrors(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	h := func(context.Context, *flow.Job[email]) error { return nil }
	if err := flow.Register(reg, h); err != nil {
		t.Fatal(err)
	}
	if err := flow.Register(reg, h); !errors.Is(err, flow.ErrDuplicateKind) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := flow.Register(reg, func(context.Context, *flow.Job[badKind]) error { return nil }); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("empty kind: %v", err)
	}
	if err := flow.Register[email](reg, nil); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("nil handler: %v", err)
	}
	if _, err := flow.NewClient(nil, flow.ClientOptions{}); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("nil client: %v", err)
	}
}

// TestEnqueueManyAndIDs: a batch lands in one call per partition, IDs are
// idempotent, and Job reads back what was enqueued.
func TestEnqueueManyAndIDs(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	c, _ := newClient(t, rdb, nil)
	ctx := context.Background()
	res, err := c.EnqueueMany(ctx,
		flow.Item{Args: email{To: "a"}, Opts: []flow.EnqueueOption{flow.WithID("welcome-a")}},
		flow.Item{Args: email{To: "b"}, Opts: []flow.EnqueueOption{flow.WithQueue("mail"), flow.WithPriority(3), flow.WithDelay(time.Hour)}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].ID != "default:0:welcome-a" || res[0].Duplicate || !strings.HasPrefix(res[1].ID, "mail:0:") {
		t.Fatalf("results %+v", res)
	}
	again, err := c.Enqueue(ctx, email{To: "a"}, flow.WithID("welcome-a"))
	if err != nil || !again.Duplicate || again.ID != res[0].ID {
		t.Fatalf("same ID again = %+v, %v", again, err)
	}
	if _, err := c.Enqueue(ctx, email{To: "other"}, flow.WithID("welcome-a")); !errors.Is(err, flow.ErrConflict) {
		t.Fatalf("conflicting ID: %v", err)
	}
	info, err := c.Job(ctx, res[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	var args email
	if err := info.DecodeArgs(&args); err != nil || args.To != "b" || info.State != flow.StateScheduled ||
		info.Priority != 3 || info.Queue != "mail" || info.MaxAttempts != flow.DefaultMaxAttempts {
		t.Fatalf("job %+v args %+v err %v", info, args, err)
	}
}
