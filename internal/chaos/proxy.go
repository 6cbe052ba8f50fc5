// Package chaos holds the machinery of Sluice's chaos suite (chaos_test.go):
// a TCP proxy between worker processes and Redis that can cut every
// connection at once, silence every connection for a while, lose the reply
// to a request Redis ran, or deliver a request twice. The suite itself runs real worker processes against it
// while faults are injected; see TestChaos.
package chaos

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// Proxy forwards TCP connections from a local listener to an upstream
// address, each client connection with its own upstream connection. If
// the upstream cannot be dialled, the client connection is closed at once,
// as a server that went away would.
//
// It parses the RESP requests and replies it forwards (verbatim), so that
// it can fault single requests: see Inject and SetRandom. A connection
// whose client sends an inline command or anything other than RESP, or
// that subscribes (pub/sub messages answer no request), is copied through
// unparsed and unfaulted from then on.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu       sync.Mutex
	links    map[*link]struct{}
	closed   bool
	silenced int           // client connections silenced
	quit     chan struct{} // closed by Close: a late drop's hold ends
	wg       sync.WaitGroup

	fmu                 sync.Mutex // guards the faults below
	armed               []*injection
	random              *randomFaults   // nil when off
	late                *lateDrops      // nil when off
	silent              *silentRequests // nil when off
	dropped, duplicated int
	lateDropped         int // of dropped
}

// NewProxy listens on a free 127.0.0.1 port and forwards to upstream.
func NewProxy(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, upstream: upstream, links: map[*link]struct{}{}, quit: make(chan struct{})}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every live connection (both sides) and returns how many
// client connections it cut. New connections are accepted as before.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		l.client.Close()
		l.server.Close()
	}
	n := len(p.links)
	clear(p.links)
	return n
}

// Close stops accepting, cuts every connection and waits for the
// forwarding goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if !p.closed {
		close(p.quit)
	}
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

// FaultKind is a fault the proxy can inject into one request.
type FaultKind int

const (
	// DropReply forwards the request to Redis, then, when its reply comes
	// back, cuts the client's connection instead of passing the reply on:
	// Redis ran the command, the client never learns it (go-redis re-sends
	// it on a new connection). Replies to earlier requests are passed on;
	// those to later ones on the same connection are lost with it.
	DropReply FaultKind = iota + 1
	// Duplicate sends the request to Redis twice in a row and passes back
	// only the reply of the second delivery (the first is swallowed), as a
	// network that re-delivered it would.
	Duplicate
	// lateDrop is a DropReply whose connection is held before the cut
	// (SetLateDrops, InjectLate).
	lateDrop
)

func (k FaultKind) String() string {
	switch k {
	case 0:
		return "none"
	case DropReply:
		return "DropReply"
	case Duplicate:
		return "Duplicate"
	case lateDrop:
		return "lateDrop"
	}
	return fmt.Sprintf("FaultKind(%d)", int(k))
}

type injection struct {
	kind  FaultKind
	n     int           // requests still to fault
	hold  time.Duration // a lateDrop's
	ran   chan struct{} // InjectLate's
	match func(args []string) bool
}

type randomFaults struct {
	drop, dup float64
	rng       *rand.Rand
	match     func(args []string) bool
}

// Inject arms kind for the next n requests whose arguments match (args[0]
// is the command name as the client sent it, e.g. "evalsha": compare it
// case-insensitively, or use Commands). A nil match matches every request.
// Faults armed by earlier calls come first; an armed fault takes
// precedence over SetRandom's. Requests that subscribe, unsubscribe or
// PING are never faulted, nor any after a subscription on its connection:
// there, replies cannot be matched to requests. Such requests do not count
// towards n.
func (p *Proxy) Inject(kind FaultKind, n int, match func(args []string) bool) {
	if kind != DropReply && kind != Duplicate {
		panic(fmt.Sprintf("chaos: Inject of %v", kind))
	}
	if n <= 0 {
		return
	}
	p.fmu.Lock()
	defer p.fmu.Unlock()
	p.armed = append(p.armed, &injection{kind: kind, n: n, match: match})
}

// InjectLate arms a DropReply for the next request that matches, whose
// connection is held for hold before the cut (as SetLateDrops' are): Redis
// has run the request, and the client sends it again only after hold, so
// that calls other clients send meanwhile land between its two runs.
// The channel it returns is closed when Redis has answered the request
// (the hold begins). It is ordered with Inject's faults, and counted by
// LateDropped.
func (p *Proxy) InjectLate(hold time.Duration, match func(args []string) bool) <-chan struct{} {
	p.fmu.Lock()
	defer p.fmu.Unlock()
	ran := make(chan struct{})
	p.armed = append(p.armed, &injection{kind: lateDrop, n: 1, hold: hold, ran: ran, match: match})
	return ran
}

// SetRandom injects faults at random into matching requests, for chaos
// runs: each matching request gets DropReply with probability drop and
// Duplicate with probability dup, drawn from a math/rand/v2 PCG seeded
// with seed, so that a run's decisions can be reproduced: one draw per
// matching request, in the order the proxy reads them (requests that do
// not match, or that an Inject fault took, draw nothing). drop = dup = 0
// turns it off. It replaces an earlier SetRandom's settings and restarts
// the sequence.
func (p *Proxy) SetRandom(drop, dup float64, seed uint64, match func(args []string) bool) {
	if !(drop >= 0 && dup >= 0 && drop+dup <= 1) {
		panic(fmt.Sprintf("chaos: SetRandom(%v, %v): probabilities must be at least 0 and add up to at most 1", drop, dup))
	}
	p.fmu.Lock()
	defer p.fmu.Unlock()
	p.random = nil
	if drop > 0 || dup > 0 {
		p.random = &randomFaults{drop: drop, dup: dup, rng: rand.New(rand.NewPCG(seed, seed)), match: match}
	}
}

// lateDrops are SetLateDrops' settings.
type lateDrops struct {
	hold, gap time.Duration
	match     func(args []string) bool
	last      time.Time // when the latest late drop was drawn
}

// SetLateDrops makes a random DropReply (SetRandom) of a request that
// matches a late one: its connection is held for hold, the reply neither
// passed on nor refused, before the cut. The client learns of the loss
// only then, as one whose network went silent learns of it by a read
// timeout, and what it sends again arrives that much later. At most one
// drop is made late per gap, so that a call is not held twice in a row
// (its re-send dropped late too) unless gap is shorter than what a
// re-send takes; the others are cut at once. A nil match turns it off.
func (p *Proxy) SetLateDrops(hold, gap time.Duration, match func(args []string) bool) {
	p.fmu.Lock()
	defer p.fmu.Unlock()
	p.late = nil
	if match != nil {
		p.late = &lateDrops{hold: hold, gap: gap, match: match}
	}
}

// Fired reports how many faults of each kind have fired so far: a reply
// dropped, a first reply of a duplicated request swallowed. A fault whose
// connection ends before the reply comes back has not fired.
func (p *Proxy) Fired() (dropped, duplicated int) {
	p.fmu.Lock()
	defer p.fmu.Unlock()
	return p.dropped, p.duplicated
}

// LateDropped reports how many of the replies dropped were dropped late
// (SetLateDrops, InjectLate).
func (p *Proxy) LateDropped() int {
	p.fmu.Lock()
	defer p.fmu.Unlock()
	return p.lateDropped
}

// Commands returns a match function for Inject and SetRandom that matches
// requests for any of the named commands, in any case.
func Commands(names ...string) func(args []string) bool {
	return func(args []string) bool {
		return len(args) > 0 && slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, args[0]) })
	}
}

// verdict is what decide makes of one request: its fault (0 for none),
// and for a lateDrop how long to hold its connection before the cut and
// the channel to close when Redis has answered it (InjectLate's, or nil).
type verdict struct {
	fault FaultKind
	hold  time.Duration
	ran   chan struct{}
}

// decide returns the verdict on a request. args builds the request's
// arguments, which only a match function needs.
func (p *Proxy) decide(args func() []string) verdict {
	var a []string
	get := func() []string {
		if a == nil {
			a = args()
		}
		return a
	}
	p.fmu.Lock()
	defer p.fmu.Unlock()
	for i, in := range p.armed {
		if in.match == nil || in.match(get()) {
			if in.n--; in.n == 0 {
				p.armed = slices.Delete(p.armed, i, i+1)
			}
			return verdict{in.kind, in.hold, in.ran}
		}
	}
	if r := p.random; r != nil && (r.match == nil || r.match(get())) {
		switch u := r.rng.Float64(); {
		case u < r.drop:
			if l := p.late; l != nil && l.match(get()) && time.Since(l.last) >= l.gap {
				l.last = time.Now()
				return verdict{fault: lateDrop, hold: l.hold}
			}
			return verdict{fault: DropReply}
		case u < r.drop+r.dup:
			return verdict{fault: Duplicate}
		}
	}
	return verdict{}
}

// fired counts a fault that fired.
func (p *Proxy) fired(kind FaultKind) {
	p.fmu.Lock()
	defer p.fmu.Unlock()
	switch kind {
	case DropReply:
		p.dropped++
	case lateDrop:
		p.dropped++
		p.lateDropped++
	case Duplicate:
		p.duplicated++
	}
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // out of file descriptors, say
			continue
		}
		p.wg.Go(func() { p.forward(c) })
	}
}

// forward dials the upstream for client c and forwards both ways until
// either side ends, then closes both.
func (p *Proxy) forward(c net.Conn) {
	u, err := net.Dial("tcp", p.upstream)
	if err != nil {
		c.Close()
		return
	}
	l := &link{p: p, client: &muteConn{Conn: c}, server: &muteConn{Conn: u}}
	if !p.track(l) {
		c.Close()
		u.Close()
		return
	}
	defer p.untrack(l)
	done := make(chan struct{}, 2)
	go func() {
		l.requests()
		done <- struct{}{}
	}()
	go func() {
		l.replies()
		done <- struct{}{}
	}()
	<-done
	c.Close()
	u.Close()
	<-done
}

// A link is one client connection and its upstream connection. requests
// forwards the client's requests and replies the server's replies; they
// share the faults decided for the requests forwarded, oldest first, for
// replies come back in the order of the requests.
type link struct {
	p              *Proxy
	client, server *muteConn

	mu      sync.Mutex
	pending []pending // one per request whose reply has not come back, from first on
	first   int
}

type pending struct {
	verdict
	// raw marks the point from which the connection is copied through
	// unparsed: the replies that follow may not answer requests.
	raw bool
}

// bufSize is the size of the proxy's read and write buffers.
const bufSize = 32 << 10

// requests reads the client's requests, decides each one's fault and
// forwards it to the server, until either connection fails.
func (l *link) requests() {
	w := bufio.NewWriterSize(l.server, bufSize)
	r := bufio.NewReaderSize(flushReader{l.client, w}, bufSize)
	var (
		buf  []byte
		args [][2]int
	)
	for {
		b, err := r.Peek(1)
		if err != nil {
			return
		}
		if b[0] != '*' { // an inline command, or not RESP at all
			l.push(pending{raw: true})
			copyRaw(l.server, l.client, w, r)
			return
		}
		if buf, args, err = readRequest(r, buf[:0], args[:0]); err != nil {
			return
		}
		if len(args) == 0 { // no reply will come
			if _, err := w.Write(buf); err != nil {
				return
			}
			continue
		}
		if hold, ok := l.p.silences(func() []string { return strArgs(buf, args) }); ok {
			l.p.silenceLink(l, hold) // this request and all after it go nowhere
		}
		var e pending
		switch name := buf[args[0][0]:args[0][1]]; {
		case passthrough(name):
			e.raw = true
		case !faultable(name):
		default:
			e.verdict = l.p.decide(func() []string { return strArgs(buf, args) })
		}
		// Before the request goes out, or its reply could beat the entry.
		l.push(e)
		if _, err := w.Write(buf); err != nil {
			return
		}
		if e.fault == Duplicate {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
		if e.raw {
			copyRaw(l.server, l.client, w, r)
			return
		}
		buf = trim(buf)
	}
}

// replies reads the server's replies and passes each on to the client, or
// not, as the fault of the request it answers says, until either
// connection fails or a reply is dropped.
func (l *link) replies() {
	w := bufio.NewWriterSize(l.client, bufSize)
	r := bufio.NewReaderSize(flushReader{l.server, w}, bufSize)
	var buf []byte
	for {
		if _, err := r.Peek(1); err != nil {
			return
		}
		// Only now: the request this reply answers has been pushed.
		e, ok := l.head()
		if ok && e.raw {
			copyRaw(l.client, l.server, w, r)
			return
		}
		var (
			kind byte
			err  error
		)
		if buf, kind, err = readReply(r, buf[:0]); err != nil {
			return
		}
		// A push (RESP3) answers no request. A reply when no request is
		// pending is one Redis sends before it hangs up (max clients).
		if kind != '>' && ok {
			switch e.fault {
			case Duplicate: // the first delivery's reply: swallow it
				l.swallowed()
				l.p.fired(Duplicate)
				continue
			case DropReply, lateDrop:
				w.Flush() // the replies before it
				l.p.fired(e.fault)
				if e.ran != nil {
					close(e.ran)
				}
				if e.hold > 0 {
					hold := time.NewTimer(e.hold)
					select {
					case <-hold.C:
					case <-l.p.quit: // not held past the proxy's end
					}
					hold.Stop()
				}
				l.client.Close()
				l.server.Close()
				return
			}
			l.pop()
		}
		if _, err := w.Write(buf); err != nil {
			return
		}
		buf = trim(buf)
	}
}

// strArgs returns a request's arguments, args' ranges of buf, as strings.
func strArgs(buf []byte, args [][2]int) []string {
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = string(buf[a[0]:a[1]])
	}
	return s
}

// trim lets a buffer that held a large request or reply go, rather than
// keep it as long as the connection lasts.
func trim(buf []byte) []byte {
	if cap(buf) > 1<<20 {
		return nil
	}
	return buf
}

func (l *link) push(e pending) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) == cap(l.pending) && l.first > 0 { // reuse the space popped
		n := copy(l.pending, l.pending[l.first:])
		l.pending, l.first = l.pending[:n], 0
	}
	l.pending = append(l.pending, e)
}

func (l *link) head() (pending, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first == len(l.pending) {
		return pending{}, false
	}
	return l.pending[l.first], true
}

func (l *link) pop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first++; l.first == len(l.pending) {
		l.pending, l.first = l.pending[:0], 0
	}
}

// swallowed turns the oldest request, a duplicated one whose first reply
// has been swallowed, into one awaiting an ordinary reply.
func (l *link) swallowed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending[l.first].fault = 0
}

// passthrough reports whether a request puts its connection into a state
// in which the server sends what answers no request (pub/sub messages, a
// MONITOR feed, a replication stream), after which the connection is
// copied through unparsed. UNSUBSCRIBE is among them: in RESP3 its replies
// are pushes.
func passthrough(name []byte) bool {
	for _, n := range [...]string{"subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "monitor", "sync", "psync"} {
		if bytes.EqualFold(name, []byte(n)) {
			return true
		}
	}
	return false
}

// faultable reports whether a request, not a passthrough one, may be
// faulted: not PING, which a pub/sub client sends on its connection.
func faultable(name []byte) bool {
	return !bytes.EqualFold(name, []byte("ping"))
}

// copyRaw copies src to dst unparsed until either fails, after flushing
// w (dst's writer) and passing on what r (src's reader) holds.
func copyRaw(dst, src *muteConn, w *bufio.Writer, r *bufio.Reader) {
	if w.Flush() != nil {
		return
	}
	if n := r.Buffered(); n > 0 {
		b, _ := r.Peek(n)
		if _, err := dst.Write(b); err != nil {
			return
		}
		r.Discard(n)
	}
	_, _ = io.Copy(dst, src)
}

// flushReader reads from r after flushing w, so that what has been
// written is sent whenever the reader is about to wait for more: pipelined
// traffic goes out in large writes, and nothing waits in the buffer while
// the proxy waits for input.
type flushReader struct {
	r io.Reader
	w *bufio.Writer
}

func (f flushReader) Read(p []byte) (int, error) {
	if f.w.Buffered() > 0 {
		if err := f.w.Flush(); err != nil {
			return 0, err
		}
	}
	return f.r.Read(p)
}

func (p *Proxy) track(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.links[l] = struct{}{}
	return true
}

func (p *Proxy) untrack(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.links, l)
}
