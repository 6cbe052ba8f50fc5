package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestReadsRefuseNewerDataModel: the reads that are not scripts
// (pipelines, a MULTI) check the partition's data model as every script
// does (TestNewerDataModelRefused): at a newer model each answers
// ErrNewerDataModel naming the partition, where it would otherwise read
// the partition's keys with this release's meaning; the reads of several
// jobs (States, JobsFields) answer so for the jobs of that partition
// alone. At this release's model, written or absent, each reads.
// Left out on purpose: PausedFlags reads only whether the paused flag
// exists, for listings of every queue, which one partition must not
// fail; StateSizes and TerminalSizes are a bulk action's progress total,
// and the action's scan script refuses each such partition when it
// reaches it, after doing what it could on the others (web
// TestBulkFailureSaysWhatItDid).
func TestReadsRefuseNewerDataModel(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"})
			ref := keys.Ref{Partition: f.p, Local: "a"}
			parts := []keys.Partition{f.p}
			reads := []struct {
				name string
				read func() error
			}{
				{"Get", func() error { _, _, err := f.st.Get(f.ctx, ref); return err }},
				{"Kids", func() error { _, err := f.st.Kids(f.ctx, ref, []string{"x"}); return err }},
				{"StateCounts", func() error { _, err := f.st.StateCounts(f.ctx, parts); return err }},
				{"Minutes", func() error { _, err := f.st.Minutes(f.ctx, parts, 100, 105); return err }},
				{"OutboxSizes", func() error { _, _, err := f.st.OutboxSizes(f.ctx, parts); return err }},
				{"PartitionContents", func() error { _, err := f.st.PartitionContents(f.ctx, parts); return err }},
				{"JobsFields", func() error {
					r, err := f.st.JobsFields(f.ctx, []keys.Ref{ref}, keys.FieldState)
					if err != nil {
						return err
					}
					return r[0].Err
				}},
				{"States", func() error {
					s, _, err := f.st.States(f.ctx, []keys.Ref{ref})
					if err != nil {
						return err
					}
					if s[0] == "" { // unreadable: read it to learn why
						return store.ErrNewerDataModel
					}
					return nil
				}},
			}
			check := func(model string, refused bool) {
				t.Helper()
				for _, r := range reads {
					err := r.read()
					switch {
					case refused && (!errors.Is(err, store.ErrNewerDataModel) || (r.name != "States" && !strings.Contains(err.Error(), f.p.Prefix()))):
						t.Errorf("%s at model %s: %v, want ErrNewerDataModel naming the partition", r.name, model, err)
					case !refused && err != nil:
						t.Errorf("%s at model %s: %v", r.name, model, err)
					}
				}
			}
			check("absent", false)
			f.rdb.Set(f.ctx, f.p.DataModel(), store.DataModel, 0)
			check("1", false)
			f.rdb.Set(f.ctx, f.p.DataModel(), store.DataModel+1, 0)
			check("2", true)
			f.rdb.Set(f.ctx, f.p.DataModel(), "x", 0) // as a script: anything but 1 is refused
			check("x", true)
		})
	}
}

// TestReadsOfAnotherTypeAreMalformed: a key a read finds holding another
// type than Sluice writes there (a job key overwritten by hand, say) is
// ErrMalformed, as it is to the scripts, not Redis's bare WRONGTYPE; a
// read of several jobs answers it for that job alone; a job's read (Get)
// leaves out its auxiliary keys of another type instead. Also when the dm
// key read with it is absent (a pipeline's own error is its first
// command's, here the dm GET's redis.Nil, which hid the WRONGTYPE after
// it).
func TestReadsOfAnotherTypeAreMalformed(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"})
			good := keys.Ref{Partition: f.p, Local: "a"}
			bad := keys.Ref{Partition: f.p, Local: "bad"}
			f.rdb.Set(f.ctx, f.p.Job("bad"), "not a hash", 0)
			if _, _, err := f.st.Get(f.ctx, bad); !errors.Is(err, store.ErrMalformed) {
				t.Errorf("Get of a job key of another type: %v, want ErrMalformed", err)
			}
			got, err := f.st.JobsFields(f.ctx, []keys.Ref{good, bad}, keys.FieldState)
			if err != nil || got[0].Err != nil || got[0].Values[0] == "" || !errors.Is(got[1].Err, store.ErrMalformed) {
				t.Errorf("JobsFields of a good job and a key of another type: %+v, %v; want the good one read, the other ErrMalformed", got, err)
			}
			states, _, err := f.st.States(f.ctx, []keys.Ref{good, bad})
			if err != nil || states[0] != "available" || states[1] != "" {
				t.Errorf("States of a good job and a key of another type: %q, %v; want [available \"\"]", states, err)
			}
			// the job's other keys of another type are left out: a job a
			// worker archived 'malformed' for one of them is still read
			for _, k := range []string{f.p.Steps("a"), f.p.Errors("a")} {
				f.rdb.Set(f.ctx, k, "not a hash", 0)
			}
			if j, _, err := f.st.Get(f.ctx, good); err != nil || j.State != "available" {
				t.Errorf("Get of a job whose checkpoints and errors keys hold another type: %+v, %v; want the job", j, err)
			}
			f.rdb.Set(f.ctx, f.p.Kids("a"), "not a hash", 0)
			if _, err := f.st.Kids(f.ctx, good, []string{"x"}); !errors.Is(err, store.ErrMalformed) {
				t.Errorf("Kids of a record of another type: %v, want ErrMalformed", err)
			}
			if _, _, err := f.st.ChildrenPage(f.ctx, good, 10); !errors.Is(err, store.ErrMalformed) {
				t.Errorf("ChildrenPage of a record of another type: %v, want ErrMalformed", err)
			}
			f.rdb.Set(f.ctx, f.p.Stats(), "not a hash", 0)
			if _, err := f.st.StateCounts(f.ctx, []keys.Partition{f.p}); !errors.Is(err, store.ErrMalformed) {
				t.Errorf("StateCounts of a counters key of another type: %v, want ErrMalformed", err)
			}
			f.rdb.Del(f.ctx, f.p.DataModel())
			f.rdb.HSet(f.ctx, f.p.DataModel(), "m", "1")
			if _, _, err := f.st.Get(f.ctx, good); !errors.Is(err, store.ErrMalformed) {
				t.Errorf("Get with a dm key of another type: %v, want ErrMalformed", err)
			}
		})
	}
}
