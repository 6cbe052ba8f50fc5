package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestProxy: bytes pass both ways, Cut closes the live connections, new
// ones are accepted after a cut, and a client of an unreachable upstream
// is hung up on.
func TestProxy(t *testing.T) {
	t.Parallel()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	p, err := NewProxy(echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	roundTrip := func(c net.Conn, r *bufio.Reader, msg string) error {
		if _, err := c.Write([]byte(msg + "\n")); err != nil {
			return err
		}
		got, err := r.ReadString('\n')
		if err == nil && got != msg+"\n" {
			err = errors.New("echoed " + got)
		}
		return err
	}
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c, bufio.NewReader(c)
	}
	a, ra := dial()
	defer a.Close()
	b, rb := dial()
	defer b.Close()
	for _, x := range []struct {
		c net.Conn
		r *bufio.Reader
	}{{a, ra}, {b, rb}} {
		if err := roundTrip(x.c, x.r, "hello"); err != nil {
			t.Fatalf("through the proxy: %v", err)
		}
	}
	if n := p.Cut(); n != 2 {
		t.Errorf("Cut cut %d connections, want 2", n)
	}
	if _, err := ra.ReadString('\n'); !errors.Is(err, io.EOF) {
		t.Errorf("read after the cut: %v, want EOF", err)
	}
	c, rc := dial()
	defer c.Close()
	if err := roundTrip(c, rc, "again"); err != nil {
		t.Fatalf("a new connection after the cut: %v", err)
	}

	echo.Close()
	dead, err := NewProxy(echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	d, err := net.Dial("tcp", dead.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := d.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("read from a proxy whose upstream is down: %v, want EOF", err)
	}
}

// startRedis starts a redis-server for one test.
func startRedis(t *testing.T) *redisproc.Server {
	t.Helper()
	srv, err := redisproc.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// startProxy starts a Proxy to upstream for one test.
func startProxy(t *testing.T, upstream string) *Proxy {
	t.Helper()
	p, err := NewProxy(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// newClient is a go-redis client, closed when the test ends.
func newClient(t *testing.T, opts *redis.Options) *redis.Client {
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func checkFired(t *testing.T, p *Proxy, dropped, duplicated int) {
	t.Helper()
	if d, u := p.Fired(); d != dropped || u != duplicated {
		t.Errorf("Fired() = %d dropped, %d duplicated; want %d, %d", d, u, dropped, duplicated)
	}
}

// TestProxyDropReply: Redis runs an INCR whose reply the proxy drops.
// go-redis, retrying on the connection's EOF, runs it again, and sees one
// successful reply for two increments; without retries it sees an error
// for an increment that happened.
func TestProxyDropReply(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	direct := newClient(t, &redis.Options{Addr: srv.Addr()})
	ns := redistest.NewNamespace(t)
	for _, tt := range []struct {
		name       string
		maxRetries int
		wantErr    bool
		want       string
	}{
		{"retried", 0, false, "2"},
		{"not retried", -1, true, "1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			p := startProxy(t, srv.Addr())
			rdb := newClient(t, &redis.Options{Addr: p.Addr(), MaxRetries: tt.maxRetries})
			key := ns + ":" + tt.name
			p.Inject(DropReply, 1, Commands("INCR"))
			n, err := rdb.Incr(ctx, key).Result()
			switch {
			case tt.wantErr && err == nil:
				t.Errorf("INCR = %d, want an error", n)
			case !tt.wantErr && (err != nil || n != 2):
				t.Errorf("INCR = %d, %v; want 2 (the retry's reply)", n, err)
			}
			checkFired(t, p, 1, 0)
			if got, err := direct.Get(ctx, key).Result(); err != nil || got != tt.want {
				t.Errorf("%s = %q, %v; want %s", key, got, err, tt.want)
			}
		})
	}
}

// TestProxyInjectLate: an INCR whose reply is dropped late has run when
// another client reads its key during the hold, and its re-send comes
// only after the hold: the second increment lands after that read.
func TestProxyInjectLate(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := startRedis(t)
	direct := newClient(t, &redis.Options{Addr: srv.Addr()})
	p := startProxy(t, srv.Addr())
	rdb := newClient(t, &redis.Options{Addr: p.Addr()})
	key := redistest.NewNamespace(t) + ":k"
	ran := p.InjectLate(2*time.Second, Commands("incr"))
	done := make(chan error, 1)
	sent := time.Now()
	go func() { done <- rdb.Incr(ctx, key).Err() }()
	testkit.Recv(t, ran, "the INCR to reach Redis")
	if n := p.LateDropped(); n != 1 {
		t.Fatalf("LateDropped() = %d, want 1", n)
	}
	if got, err := direct.Get(ctx, key).Result(); err != nil || got != "1" {
		t.Fatalf("during the hold %s = %q, %v; want 1 (Redis ran the INCR)", key, got, err)
	}
	select {
	case err := <-done:
		t.Fatalf("the INCR returned during the hold: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := <-done; err != nil {
		t.Fatalf("INCR: %v, want the re-send's reply", err)
	}
	if d := time.Since(sent); d < 2*time.Second {
		t.Fatalf("the INCR returned %v after it was sent, within its hold", d)
	}
	if got, err := direct.Get(ctx, key).Result(); err != nil || got != "2" {
		t.Fatalf("after the re-send %s = %q, %v; want 2", key, got, err)
	}
	checkFired(t, p, 1, 0)
}

// TestProxyCloseEndsHold: Close does not wait out a late drop's hold.
func TestProxyCloseEndsHold(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := startRedis(t)
	p, err := NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	rdb := newClient(t, &redis.Options{Addr: p.Addr(), MaxRetries: -1})
	ran := p.InjectLate(time.Hour, Commands("incr"))
	go rdb.Incr(ctx, redistest.NewNamespace(t)+":k")
	testkit.Recv(t, ran, "the INCR to reach Redis")
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the hour's hold")
	}
}

// TestProxyDuplicate: a duplicated INCR increments twice, the client sees
// the second reply, and its connection goes on working.
func TestProxyDuplicate(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := startRedis(t)
	p := startProxy(t, srv.Addr())
	rdb := newClient(t, &redis.Options{Addr: p.Addr(), MaxRetries: -1})
	key := redistest.NewNamespace(t) + ":k"
	conn := rdb.Conn()
	defer conn.Close()
	id, err := conn.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	p.Inject(Duplicate, 1, Commands("incr"))
	if n, err := conn.Incr(ctx, key).Result(); err != nil || n != 2 {
		t.Errorf("INCR = %d, %v; want 2", n, err)
	}
	if got, err := conn.Get(ctx, key).Result(); err != nil || got != "2" {
		t.Errorf("GET = %q, %v; want 2", got, err)
	}
	if again, err := conn.ClientID(ctx).Result(); err != nil || again != id {
		t.Errorf("CLIENT ID = %d, %v; want %d, the same connection", again, err, id)
	}
	checkFired(t, p, 0, 1)
}

// TestProxyPipeline: in a pipeline, replies stay matched to their
// requests around duplicated ones, and one dropped reply cuts the
// connection only where it comes.
func TestProxyPipeline(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := startRedis(t)
	p := startProxy(t, srv.Addr())
	rdb := newClient(t, &redis.Options{Addr: p.Addr(), MaxRetries: -1})
	ns := redistest.NewNamespace(t)
	key := func(i int) string { return fmt.Sprintf("%s:%d", ns, i) }
	twice := map[string]bool{key(10): true, key(11): true, key(50): true, key(99): true}
	p.Inject(Duplicate, len(twice), func(args []string) bool {
		return strings.EqualFold(args[0], "incr") && twice[args[1]]
	})
	pipe := rdb.Pipeline()
	var incrs []*redis.IntCmd
	for i := range 100 {
		incrs = append(incrs, pipe.Incr(ctx, key(i)))
		pipe.Echo(ctx, "x")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, c := range incrs {
		want := int64(1)
		if twice[key(i)] {
			want = 2
		}
		if c.Val() != want {
			t.Errorf("INCR %s = %d, want %d", key(i), c.Val(), want)
		}
	}
	checkFired(t, p, 0, len(twice))

	p.Inject(DropReply, 1, func(args []string) bool { return len(args) > 1 && args[1] == key(5) })
	pipe = rdb.Pipeline()
	var gets []*redis.StringCmd
	for i := range 10 {
		gets = append(gets, pipe.Get(ctx, key(i)))
	}
	if _, err := pipe.Exec(ctx); err == nil {
		t.Error("a pipeline with a dropped reply succeeded")
	}
	// go-redis fails the whole pipeline, but read the replies before.
	for i, c := range gets[:5] {
		if c.Val() != "1" {
			t.Errorf("GET %s before the dropped reply = %q, want 1", key(i), c.Val())
		}
	}
	checkFired(t, p, 1, len(twice))
}

// TestProxyRaw: faults apply to a request however it arrives in pieces,
// and a client speaking inline commands is served, unparsed.
func TestProxyRaw(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	p := startProxy(t, srv.Addr())
	key := redistest.NewNamespace(t) + ":k"
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(c)

	p.Inject(Duplicate, 1, nil)
	req := fmt.Sprintf("*2\r\n$4\r\nINCR\r\n$%d\r\n%s\r\n", len(key), key)
	for i := range len(req) {
		if _, err := c.Write([]byte{req[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := r.ReadString('\n'); err != nil || got != ":2\r\n" {
		t.Errorf("INCR sent byte by byte, duplicated: %q, %v; want :2", got, err)
	}
	checkFired(t, p, 0, 1)

	p.Inject(Duplicate, 1, nil)
	if _, err := c.Write([]byte("INCR " + key + "\r\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadString('\n'); err != nil || got != ":3\r\n" {
		t.Errorf("inline INCR: %q, %v; want :3, not duplicated", got, err)
	}
	checkFired(t, p, 0, 1)
}

// TestProxyRandom: SetRandom's decisions are the same for the same seed,
// drawn only for matching requests after the armed faults, and replayed
// through go-redis they give the same outcomes.
func TestProxyRandom(t *testing.T) {
	t.Parallel()
	decisions := func(seed uint64, gets bool, inject int) []FaultKind {
		var p Proxy
		p.SetRandom(0.2, 0.3, seed, Commands("incr"))
		p.Inject(Duplicate, inject, Commands("incr"))
		var out []FaultKind
		for i := 0; len(out) < 300; i++ {
			name := "INCR"
			if gets && i%3 == 0 {
				name = "GET"
			}
			k := p.decide(func() []string { return []string{name, "k"} }).fault
			if name == "GET" {
				if k != 0 {
					t.Fatalf("a GET, not matched, got %v", k)
				}
				continue
			}
			out = append(out, k)
		}
		return out
	}
	want := decisions(1, false, 0)
	if diff := cmp.Diff(want, decisions(1, true, 0)); diff != "" {
		t.Errorf("seed 1, with unmatched requests in between (-without +with):\n%s", diff)
	}
	if diff := cmp.Diff(want[:297], decisions(1, false, 3)[3:]); diff != "" {
		t.Errorf("seed 1, after three armed faults (-without +with):\n%s", diff)
	}
	if cmp.Equal(want, decisions(2, false, 0)) {
		t.Error("seeds 1 and 2 made the same decisions")
	}
	counts := map[FaultKind]int{}
	for _, k := range want {
		counts[k]++
	}
	if counts[DropReply] < 30 || counts[DropReply] > 90 || counts[Duplicate] < 60 || counts[Duplicate] > 120 {
		t.Errorf("300 decisions at 0.2 and 0.3: %v", counts)
	}
	var off Proxy
	off.SetRandom(0, 0, 1, nil)
	if k := off.decide(func() []string { return []string{"incr"} }).fault; k != 0 {
		t.Errorf("SetRandom(0, 0) decided %v", k)
	}

	srv := startRedis(t)
	ns := redistest.NewNamespace(t)
	run := func(name string, seed uint64) (replies []string, dropped, duplicated int) {
		ctx := testContext(t)
		p := startProxy(t, srv.Addr())
		rdb := newClient(t, &redis.Options{Addr: p.Addr()})
		p.SetRandom(0.2, 0.2, seed, Commands("incr"))
		for range 30 {
			n, err := rdb.Incr(ctx, ns+":"+name).Result()
			if err != nil {
				replies = append(replies, err.Error()) // all retries dropped
				continue
			}
			replies = append(replies, fmt.Sprint(n))
		}
		dropped, duplicated = p.Fired()
		return replies, dropped, duplicated
	}
	r1, d1, u1 := run("a", 7)
	r2, d2, u2 := run("b", 7)
	if diff := cmp.Diff(r1, r2); diff != "" || d1 != d2 || u1 != u2 {
		t.Errorf("two runs with seed 7: %d dropped and %d duplicated, then %d and %d; replies (-first +second):\n%s", d1, u1, d2, u2, diff)
	}
	if d1 == 0 || u1 == 0 {
		t.Errorf("30 INCRs at 0.2 and 0.2: %d dropped, %d duplicated", d1, u1)
	}
	t.Logf("seed 7: %d dropped, %d duplicated, replies %v", d1, u1, r1)
}

// TestProxyPubSub: a subscriber through the proxy gets its messages and
// pongs while faults are armed for other commands, some of which fire on
// its connection before it subscribes; they are not spent on pub/sub.
func TestProxyPubSub(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := startRedis(t)
	p := startProxy(t, srv.Addr())
	rdb := newClient(t, &redis.Options{Addr: p.Addr()})
	ns := redistest.NewNamespace(t)
	p.Inject(DropReply, 1, Commands("incr"))
	// HELLO and CLIENT SETINFO open every connection, the subscriber's too.
	p.Inject(Duplicate, 100, Commands("hello", "client", "get"))

	sub := rdb.Subscribe(ctx, ns+":ch")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if _, dup := p.Fired(); dup == 0 {
		t.Error("no HELLO duplicated before SUBSCRIBE")
	}
	for i := range 5 {
		if err := rdb.Publish(ctx, ns+":ch", fmt.Sprint(i)).Err(); err != nil {
			t.Fatal(err)
		}
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil || msg.Payload != fmt.Sprint(i) {
			t.Fatalf("message %d: %v, %v", i, msg, err)
		}
	}
	if err := sub.Ping(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	if got, err := sub.Receive(ctx); err != nil {
		t.Errorf("after PING: %v", err)
	} else if pong, ok := got.(*redis.Pong); !ok || pong.Payload != "hi" {
		t.Errorf("after PING: %#v, want a pong", got)
	}
	if err := sub.Subscribe(ctx, ns+":other"); err != nil {
		t.Fatal(err)
	}
	if got, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	} else if s, ok := got.(*redis.Subscription); !ok || s.Channel != ns+":other" {
		t.Fatalf("after SUBSCRIBE: %#v", got)
	}
	if n, err := rdb.Publish(ctx, ns+":other", "o").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH = %d, %v; want 1 subscriber", n, err)
	}
	if msg, err := sub.ReceiveMessage(ctx); err != nil || msg.Payload != "o" {
		t.Errorf("message on a second channel: %v, %v", msg, err)
	}

	if dropped, _ := p.Fired(); dropped != 0 {
		t.Errorf("%d replies dropped before any INCR", dropped)
	}
	if n, err := rdb.Incr(ctx, ns+":k").Result(); err != nil || n != 2 {
		t.Errorf("INCR = %d, %v; want 2, retried after the dropped reply", n, err)
	}
	if got, err := rdb.Get(ctx, ns+":k").Result(); err != nil || got != "2" {
		t.Errorf("GET = %q, %v; want 2", got, err)
	}
	if dropped, _ := p.Fired(); dropped != 1 {
		t.Errorf("%d replies dropped, want 1", dropped)
	}
}
