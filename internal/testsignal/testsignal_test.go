package testsignal

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// fakeTB records a wait's failure instead of ending the test.
type fakeTB struct{ failed string }

func (*fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }

// TestOffCostsNothing: an off signal (the zero value, as in production)
// allocates nothing, also in a worker set read from a context without
// one, and its waits report it.
func TestOffCostsNothing(t *testing.T) {
	var s Signal[Settled]
	v := Settled{Worker: "w", JobID: "default:0:x", State: "completed"}
	if n := testing.AllocsPerRun(1000, func() { s.Signal(v) }); n != 0 {
		t.Errorf("Signal on an off signal allocates %v times", n)
	}
	set := WorkerFrom(context.Background())
	if n := testing.AllocsPerRun(1000, func() { set.Claimed.Signal(Claimed{Worker: "w", JobID: "j", Fence: 1}) }); n != 0 {
		t.Errorf("Signal on an off set allocates %v times", n)
	}
	if s.Enabled() || set.Settled.Enabled() || s.C() != nil || s.Drain() != nil {
		t.Error("a zero signal is on")
	}
	if _, ok := s.Await(time.Millisecond, nil); ok {
		t.Error("Await on an off signal returned a value")
	}
	var tb fakeTB
	s.Wait(&tb)
	if !strings.Contains(tb.failed, "off") {
		t.Errorf("Wait on an off signal: %q, want a failure", tb.failed)
	}
}

// TestOnDoesNotAllocate: an initialised signal records a value without
// allocating (its buffer has room).
func TestOnDoesNotAllocate(t *testing.T) {
	var s Signal[Pass]
	s.InitSize("pass", 2000)
	if n := testing.AllocsPerRun(1000, func() { s.Signal(Pass{Worker: "w", N: 1}) }); n != 0 {
		t.Errorf("Signal allocates %v times", n)
	}
}

// TestWaitFor: values come in order; WaitFor skips those its predicate
// refuses; a timeout fails the test naming the signal, what it skipped
// and what was dropped.
func TestWaitFor(t *testing.T) {
	var s Signal[int]
	s.Init("numbers")
	for i := range 5 {
		s.Signal(i)
	}
	if v := s.Wait(t); v != 0 {
		t.Fatalf("Wait: %d, want 0", v)
	}
	if v := s.WaitFor(t, func(v int) bool { return v >= 3 }); v != 3 {
		t.Fatalf("WaitFor: %d, want 3", v)
	}
	var tb fakeTB
	s.WaitWithin(&tb, 10*time.Millisecond, func(v int) bool { return v > 10 })
	if !strings.Contains(tb.failed, "no numbers signal matched") || !strings.Contains(tb.failed, "skipped 1, the last 4") {
		t.Errorf("timeout message %q", tb.failed)
	}
	go func() {
		time.Sleep(time.Millisecond) // a value that comes while Wait waits
		s.Signal(42)
	}()
	if v := s.Wait(t); v != 42 {
		t.Errorf("Wait: %d, want 42", v)
	}
}

// TestFullDropsOldest: Signal never blocks; a full buffer drops its
// oldest value, and counts it.
func TestFullDropsOldest(t *testing.T) {
	var s Signal[int]
	s.InitSize("small", 3)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 10 {
			s.Signal(i)
		}
	}()
	select {
	case <-done:
	case <-time.After(Timeout):
		t.Fatal("Signal blocked on a full buffer")
	}
	if got := fmt.Sprint(s.Drain()); got != "[7 8 9]" {
		t.Errorf("kept %s, want the newest [7 8 9]", got)
	}
	if s.Dropped() != 7 {
		t.Errorf("dropped %d, want 7", s.Dropped())
	}
	var tb fakeTB
	s.WaitWithin(&tb, time.Millisecond, nil)
	if !strings.Contains(tb.failed, "7 dropped") {
		t.Errorf("timeout message %q does not name the drops", tb.failed)
	}
}

// TestSubscribe: a subscription gets every value signalled after it, and
// none before; it takes none from the signal's own buffer or from another
// subscription; closed, it gets no more.
func TestSubscribe(t *testing.T) {
	var s Signal[string]
	s.Init("names")
	s.Signal("before")
	a, b := s.Subscribe(), s.Subscribe()
	s.Signal("x")
	s.Signal("y")
	if v := a.WaitFor(t, func(v string) bool { return v == "y" }); v != "y" {
		t.Fatalf("a: %q", v)
	}
	if v := b.Wait(t); v != "x" {
		t.Fatalf("b: %q, want x (a's wait takes nothing from b)", v)
	}
	if got := fmt.Sprint(s.Drain()); got != "[before x y]" {
		t.Fatalf("the signal's own buffer: %s", got)
	}
	a.Close()
	s.Signal("z")
	if got := a.Drain(); len(got) != 0 {
		t.Errorf("a closed subscription got %v", got)
	}
	if v := b.Wait(t); v != "y" {
		t.Errorf("b: %q, want y", v)
	}
	b.Close()
}

// TestWorkerFromContext: a set put in a context comes out sharing its
// buffers; a context without one gives the zero set.
func TestWorkerFromContext(t *testing.T) {
	set := NewWorker()
	got := WorkerFrom(WithWorker(context.Background(), set))
	got.Idle.Signal(Idle{Worker: "w"})
	if v := set.Idle.Wait(t); v.Worker != "w" {
		t.Errorf("idle %+v", v)
	}
	if z := WorkerFrom(context.Background()); z.Settled.Enabled() || z.Idle.Enabled() {
		t.Error("the set of a context without one is on")
	}
}

// TestNoTestCode: the package is linked into production binaries (the
// runtime signals through it), so it must not bring in testing.
func TestNoTestCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "testing" || strings.Contains(dep, "/internal/testkit") {
			t.Errorf("testsignal imports %s", dep)
		}
	}
}
