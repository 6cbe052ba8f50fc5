package isolated

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// TestBigReplyToStoppedWorkerEndsWithLease: the worker is stopped
// (SIGSTOP) as the handler returns a reply larger than a pipe's buffer:
// nobody reads the child's stdout any more, and the reply's write blocks.
// The lease the child was told of (300 ms) runs out meanwhile, and serve
// returns ErrLeaseExpired (Main then kills the group) instead of waiting
// on the write for as long as the worker is stopped.
func TestBigReplyToStoppedWorkerEndsWithLease(t *testing.T) {
	inR, inW := io.Pipe() // the parent: says the start, then nothing (stopped), never closes
	t.Cleanup(func() { _ = inW.Close() })
	outR, outW, err := os.Pipe() // the parent stopped: nobody reads
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = outR.Close(); _ = outW.Close() })
	go func() {
		_ = writeFrame(inW, frameStart, startMsg{NS: "t", ID: "q:0:abc", Queue: "q", Kind: "k", LeaseMS: 300})
	}()
	h := runtime.HandlerFunc(func(ctx context.Context, _ *runtime.Attempt) ([]byte, error) {
		return make([]byte, 1<<20), nil // a 1 MiB result
	})
	done := make(chan error, 1)
	begin := time.Now()
	go func() {
		_, err := serve(context.Background(), kindHandlers{h}, inR, outW)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrLeaseExpired) {
			t.Errorf("serve returned %v after %v, want ErrLeaseExpired", err, time.Since(begin))
		}
	case <-time.After(testkit.Timeout):
		t.Errorf("the lease the child knew of ran out %v ago, and serve has not returned: blocked writing its reply "+
			"to its stopped worker, the child (and its group) outlive the attempt", time.Since(begin)-300*time.Millisecond)
	}
}
