package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestEnqueueTimeOutOfRange: a job whose run time or deadline is past
// MaxTime (or before MinTime) is failed alone with ErrTimeOutOfRange,
// nothing written for it, and the jobs beside it are enqueued. Sent, a
// run time of 1e17 ms was written by Redis as "1e+17" (%.17g), which no
// reader takes back: the job could not be read. flow refuses such times
// first; a follow-up read from an outbox entry reaches the store as it is.
func TestEnqueueTimeOutOfRange(t *testing.T) {
	t.Parallel()
	far := time.UnixMilli(1e17)
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			jobs := []store.NewJob{
				{Local: "a", Kind: "k", Payload: []byte("p"), MaxAttempts: 3},
				{Local: "late", Kind: "k", Payload: []byte("p"), MaxAttempts: 3, RunAt: far},
				{Local: "b", Kind: "k", Payload: []byte("p"), MaxAttempts: 3, RunAt: store.MaxTime},
				{Local: "dl", Kind: "k", Payload: []byte("p"), MaxAttempts: 3, Deadline: far},
				{Local: "early", Kind: "k", Payload: []byte("p"), MaxAttempts: 3, RunAt: store.MinTime.Add(-time.Millisecond)},
			}
			res, err := f.st.Enqueue(f.ctx, f.p, jobs)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range []bool{true, false, true, false, false} {
				added := res[i].Status == store.Added && res[i].Err == nil
				if added != want || (!want && (res[i].Status != store.Failed || !errors.Is(res[i].Err, store.ErrTimeOutOfRange))) {
					t.Errorf("%s: %+v, want added %v (else Failed, ErrTimeOutOfRange)", jobs[i].Local, res[i], want)
				}
				if want {
					f.get(jobs[i].Local) // readable
				} else if _, _, err := f.st.Get(f.ctx, f.ref(jobs[i].Local)); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s: %v, want nothing written", jobs[i].Local, err)
				}
			}
		})
	}
}
