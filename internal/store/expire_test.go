package store_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestExpireRecordsOrphanProvenance: a worker that gives a lease up by its
// own clock acks CodeExpire, and the job records what a reap records: the
// holder, when, the count, the lease ID as the orphan lease (the lease ID
// itself gone), with the crash charged. A handler's crash whose reason
// happens to be "lease_expired" is an ordinary crash, recording none: the
// provenance follows the code the worker alone sends, not a reason string
// a handler can choose.
func TestExpireRecordsOrphanProvenance(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "given"}, store.NewJob{Local: "handler"})
			given, handler := f.claimOne("w"), f.claimOne("w")
			if r := f.ack(given, store.Ack{Code: store.CodeExpire, Reason: "lease_expired", Message: "given up"}); r.State != "retryable" {
				t.Fatalf("expire: %+v", r)
			}
			if r := f.ack(handler, store.Ack{Code: store.CodeCrash, Reason: "lease_expired", Message: "a handler's"}); r.State != "retryable" {
				t.Fatalf("crash: %+v", r)
			}
			j, _ := f.get("given")
			if j.CrashAttempt != 1 || j.Orphan.Holder != "w" || j.Orphan.Count != 1 || j.Orphan.ExpiredAt.IsZero() || j.LeaseID != "" {
				t.Errorf("given back: crash %d, orphan %+v, lease %q; want 1, held by w once, no lease ID", j.CrashAttempt, j.Orphan, j.LeaseID)
			}
			j, _ = f.get("handler")
			if j.CrashAttempt != 1 || j.Orphan.Holder != "" || j.Orphan.Count != 0 {
				t.Errorf("a handler's crash: crash %d, orphan %+v; want 1 and none", j.CrashAttempt, j.Orphan)
			}
		})
	}
}
