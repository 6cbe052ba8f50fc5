package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/sluicetype"
)

// reply is a Redis error reply, as go-redis returns one.
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

// TestRelayFailurePasses: a relay leaves an entry for a later pass only
// for a failure known to pass (Redis unreachable or in a state that ends
// by itself, a resize under way); a failure that would recur for the
// entry dead-letters it, so that it never stops the entries after it. A
// full server's "ERR max number of clients reached" passes, unlike other
// ERR replies.
func TestRelayFailurePasses(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		err    error
		passes bool
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{io.EOF, true},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{context.DeadlineExceeded, true},
		{redis.ErrClosed, true},
		{redis.ErrPoolTimeout, true},
		{reply("LOADING Redis is loading the dataset in memory"), true},
		{reply("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT."), true},
		{reply("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{reply("MOVED 3999 127.0.0.1:6381"), true},
		{reply("ASK 3999 127.0.0.1:6381"), true},
		{reply("CLUSTERDOWN The cluster is down"), true},
		{reply("MASTERDOWN Link with MASTER is down"), true},
		{reply("READONLY You can't write against a read only replica."), true},
		{reply("OOM command not allowed when used memory > 'maxmemory'."), true},
		{reply("ERR max number of clients reached"), true},
		{errResizing, true},
		{fmt.Errorf("%w: partition q:0", ErrNewerDataModel), true},

		{reply("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{reply("ERR value is not an integer or out of range"), false},
		{reply("BUSYKEY Target key name already exists."), false},
		{reply("NOPERM this user has no permissions to access one of the keys used as arguments"), false},
		{fmt.Errorf("%w: a key holds another type than Sluice wrote", ErrMalformed), false},
		{&sluicetype.EffectError{Msg: "INCRBY k: the key holds a list"}, false},
		{errors.New("sluice: unexpected enqueue status ?"), false},
	}
	for _, c := range cases {
		if got := passes(ctx, c.err); got != c.passes {
			t.Errorf("passes(%v) = %v, want %v", c.err, got, c.passes)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if !passes(cancelled, reply("ERR anything")) {
		t.Error("a cancelled relay's failure must leave its entry")
	}
}
