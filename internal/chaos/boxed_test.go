package chaos

// The boxed jobs: ledger jobs whose attempts run in isolated children
// (runtime/isolated) that the chaos workers start, the test binary
// executed once more with boxedArg as its first argument. The child has no
// Redis connection: its checkpoints and effects are committed by its
// worker, fenced by that worker's lease, so the faults the worker meets
// (SIGKILL, SIGSTOP past the lease, Redis restarts, cut and silenced
// connections, lost and duplicated script replies) are the boxed jobs'
// too; and a child whose worker dies must end with it (its stdin ends),
// one whose worker is stopped must end when the lease runs out.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
	"github.com/sluicehq/sluice/step"
)

// boxedArg, as the first argument of the test binary, makes it an
// isolated child serving one attempt of a boxed job; the next arguments
// are the run's box directory (workerConfig.BoxDir) and the namespace.
const boxedArg = "sluice-chaos-boxed-child"

// boxedJob is a ledger job in a box: ledgerSteps durable steps, each
// committing one increment of its own counter in the two ledgers, and a
// completion effect, run in an isolated child. Pad is padFor(K), carried
// to the child and checked there.
type boxedJob struct {
	K   int
	Pad []byte
}

func (boxedJob) Kind() string { return "chaos_boxed" }

// boxedEvery: the producer adds boxed job K alongside ledger job
// boxedEvery*K + 1.
const boxedEvery = 8

func boxedID(k int) string { return fmt.Sprintf("x%d", k) }

// boxedField names one effect of boxed job k: step i or "done".
func boxedField(k int, what string) string { return fmt.Sprintf("x%d:%s", k, what) }

// boxedFields are the effects of the boxed jobs IDs (job k at index k).
func boxedFields(ids []string) map[string]bool {
	want := map[string]bool{}
	for k := range ids {
		for i := 1; i <= ledgerSteps; i++ {
			want[boxedField(k, stepName(i))] = true
		}
		want[boxedField(k, "done")] = true
	}
	return want
}

// boxedMain is an isolated child: it notes itself in the box directory
// (a file named by its pid), serves its attempt, notes how Serve ended
// and ends as isolated.Main does (isolated.Exit).
func boxedMain(args []string) {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "boxed child: want the box directory and the namespace")
		os.Exit(2)
	}
	dir, ns := args[0], args[1]
	note, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(os.Getpid())), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "boxed child:", err)
		os.Exit(2)
	}
	_, _ = note.WriteString("started\n")
	err = isolated.Serve(boxedRegistry(ns, note))
	end := "replied"
	switch {
	case errors.Is(err, isolated.ErrParentGone):
		end = "parent gone"
	case errors.Is(err, isolated.ErrLeaseExpired):
		end = "lease expired"
	case err != nil && strings.Contains(err.Error(), "reading the attempt: EOF"):
		end = "parent gone before the attempt" // its worker died as it started it
	case err != nil:
		end = "error " + strings.ReplaceAll(err.Error(), "\n", " ")
	}
	_, _ = note.WriteString(end + "\n")
	_ = note.Close()
	isolated.Exit(err)
}

// boxedRegistry is the child's: the boxed job alone. What the handler
// sees that it should not (wrong padding) and its stale steps are noted
// in note.
func boxedRegistry(ns string, note *os.File) *flow.Registry {
	reg := flow.NewRegistry()
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[boxedJob]) error {
		k := job.Args.K
		if !bytes.Equal(job.Args.Pad, padFor(k)) {
			_, _ = fmt.Fprintf(note, "bad padding %s %d\n", job.ID, len(job.Args.Pad))
			return fmt.Errorf("boxed job %d: %d bytes of padding, want %d", k, len(job.Args.Pad), len(padFor(k)))
		}
		for i := 1; i <= ledgerSteps; i++ {
			name := stepName(i)
			field := boxedField(k, name)
			err := step.Do(ctx, name, func(ctx context.Context) error {
				time.Sleep(time.Duration(10+rand.IntN(31)) * time.Millisecond) // not watching ctx, as the ledger jobs
				return step.Effect(ctx,
					idempotency.HIncrBy(idempotency.SlotKey(ctx, "ledger"), field, 1),
					idempotency.HIncrBy(foreignLedger(ns), field, 1))
			})
			if errors.Is(err, step.ErrStale) {
				_, _ = fmt.Fprintf(note, "stale step %s %s\n", job.ID, name)
			}
			if err != nil {
				return err
			}
		}
		field := boxedField(k, "done")
		return step.OnComplete(ctx,
			idempotency.HIncrBy(idempotency.SlotKey(ctx, "ledger"), field, 1),
			idempotency.HIncrBy(foreignLedger(ns), field, 1))
	}))
	return reg
}

// withBoxes routes the boxed jobs of a worker process of cfg to isolated
// children (nothing when cfg.BoxDir is empty); their stderr is copied to
// the worker's, where the fleet looks for race reports.
func withBoxes(cfg workerConfig, next runtime.Handlers) (runtime.Handlers, error) {
	if cfg.BoxDir == "" {
		return next, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	h, err := isolated.Handler(isolated.Command{Path: self, Args: []string{boxedArg, cfg.BoxDir, cfg.NS}}, isolated.Options{Stderr: os.Stderr})
	if err != nil {
		return nil, err
	}
	return isolated.Handlers{Kinds: map[string]runtime.Handler{boxedJob{}.Kind(): h}, Next: next}, nil
}

// boxStats sums up the boxed jobs and their children.
type boxStats struct {
	ledgerStats
	Children int            // child processes noted
	Ends     map[string]int // how their Serve ended ("replied", "parent gone", "lease expired", ...; "none": killed first)
	Stale    int            // stale steps the children saw
}

func (s boxStats) String() string {
	ends := make([]string, 0, len(s.Ends))
	for _, e := range slices.Sorted(maps.Keys(s.Ends)) {
		ends = append(ends, fmt.Sprintf("%d %s", s.Ends[e], e))
	}
	return fmt.Sprintf("%d isolated children (%s), %d stale steps in them, %d crashes charged to %d boxed jobs (at most %d to one), %d attempts spent",
		s.Children, strings.Join(ends, ", "), s.Stale, s.Crashes, s.Crashed, s.MaxCrash, s.Attempts)
}

// checkBoxed checks that each boxed job (IDs, job k at index k) completed
// with its checkpoints, read back with its padding, that no child saw the
// wrong padding, and sums up the notes of the children in dir.
func checkBoxed(ctx context.Context, t *testing.T, c *flow.Client, ids []string, dir string) boxStats {
	t.Helper()
	st := boxStats{Ends: map[string]int{}}
	want := make([]string, ledgerSteps)
	for i := range want {
		want[i] = fmt.Sprintf("%s@%d", stepName(i+1), i)
	}
	for k, id := range ids {
		info, err := c.Job(ctx, id)
		if err != nil {
			t.Errorf("boxed job %d (%s) lost: %v", k, id, err)
			continue
		}
		if info.State != flow.StateCompleted {
			t.Errorf("boxed job %d: %s (%s), crash_attempt %d attempt %d, errors %+v; want completed", k, info.State, info.Reason, info.CrashAttempt, info.Attempt, info.Errors)
		}
		var args boxedJob
		if err := info.DecodeArgs(&args); err != nil || args.K != k || !bytes.Equal(args.Pad, padFor(k)) {
			t.Errorf("boxed job %d read back as %d with %d bytes of padding (%v), want %d", k, args.K, len(args.Pad), err, len(padFor(k)))
		}
		var steps []string
		for _, s := range info.Steps {
			steps = append(steps, fmt.Sprintf("%s@%d", s.Name, s.Index))
		}
		if diff := cmp.Diff(want, steps); diff != "" {
			t.Errorf("boxed job %d checkpoints (-want +got):\n%s", k, diff)
		}
		st.Crashes += info.CrashAttempt
		st.MaxCrash = max(st.MaxCrash, info.CrashAttempt)
		st.Attempts += info.Attempt
		if info.CrashAttempt > 0 {
			st.Crashed++
		}
	}
	notes, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range notes {
		b, err := os.ReadFile(filepath.Join(dir, n.Name()))
		if err != nil {
			t.Fatal(err)
		}
		st.Children++
		end := "none"
		for l := range strings.Lines(string(b)) {
			l = strings.TrimSuffix(l, "\n")
			switch {
			case l == "started":
			case strings.HasPrefix(l, "bad padding "):
				t.Errorf("isolated child %s saw the wrong padding: %s", n.Name(), l)
			case strings.HasPrefix(l, "stale step "):
				st.Stale++
			default:
				end = l
			}
		}
		if strings.HasPrefix(end, "error ") {
			// a protocol error or a start the worker abandoned: reported, a
			// crash of its attempt
			t.Logf("isolated child %s: %s", n.Name(), end)
			end = "error"
		}
		st.Ends[end]++
	}
	return st
}

// liveChildren lists the processes still running (not zombies) whose
// command line names dir: the isolated children of the run.
func liveChildren(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var live []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(boxedArg+"\x00"+dir+"\x00")) {
			continue // gone, or a zombie (no command line), or not ours
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		var fields []string // state, ppid, pgrp, ...
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			fields = strings.Fields(string(stat[i+1:]))
		}
		if len(fields) < 3 {
			live = append(live, strconv.Itoa(pid))
			continue
		}
		if fields[0] == "Z" {
			continue
		}
		live = append(live, fmt.Sprintf("%d (state %s, parent %s, group %s)", pid, fields[0], fields[1], fields[2]))
	}
	return live
}

// checkNoChildren waits a little for the run's isolated children to be
// gone once every worker has ended (a child whose worker died ends when
// its stdin does; one killed with its group is gone at once), fails for
// those that remain and kills them.
func checkNoChildren(t *testing.T, dir string) {
	t.Helper()
	var live []string
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if live = liveChildren(dir); len(live) == 0 || time.Now().After(end) {
			break
		}
	}
	if len(live) == 0 {
		return
	}
	t.Errorf("%d isolated children outlived their workers: %v", len(live), live)
	for _, p := range live {
		if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
