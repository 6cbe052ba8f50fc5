package admin_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// root is the module's directory, from this package's.
const root = "../.."

// listed is admin.Reasons as reason -> state.
func listed() map[string]string {
	out := map[string]string{}
	for _, s := range []string{flow.StateArchived, flow.StateCancelled, flow.StateQuarantined, flow.StateCompleted} {
		for _, r := range admin.Reasons(s) {
			out[r] = s
		}
	}
	return out
}

// TestReasonsAgreeWithCode: the reasons admin.Reasons lists, each with
// its state, are exactly those the scripts record (every finish call of
// lua/*.lua, with its target state) and the park reasons the Go code
// gives (every outcome.Park, park call and CodePark ack outside tests,
// archived). A reason the code passes on from elsewhere must be one of the
// known pass-throughs; a new way of giving one fails this test until the
// list is told.
func TestReasonsAgreeWithCode(t *testing.T) {
	t.Parallel()
	written := map[string]string{}
	add := func(where, reason, state string) {
		t.Helper()
		if s, ok := written[reason]; ok && s != state {
			t.Errorf("%s: reason %q finishes a job as %s, elsewhere as %s", where, reason, state, s)
		}
		written[reason] = state
	}

	// the scripts: finish(jk, id, from, state, reason[, m]), and claim.lua's
	// park(jk, id, reason, ...) that calls it
	finishCall := regexp.MustCompile(`\bfinish\(([^()]*)\)`)
	parkCall := regexp.MustCompile(`\bpark\(jk, id, '(\w+)'`)
	scripts, err := filepath.Glob(filepath.Join(root, "lua", "*.lua"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	passThrough := 0 // finish calls whose reason is a park's, given by the caller
	for _, path := range scripts {
		src := read(t, path)
		name := filepath.Base(path)
		if n, m := strings.Count(src, "finish("), len(finishCall.FindAllString(src, -1)); n != m {
			t.Errorf("%s: %d finish calls, %d read: write them on one line, without nested calls", name, n, m)
		}
		for _, m := range finishCall.FindAllStringSubmatch(src, -1) {
			args := strings.Split(m[1], ",")
			for i := range args {
				args[i] = strings.TrimSpace(args[i])
			}
			switch {
			case strings.Contains(src, "local function finish("+m[1]+")"):
				continue // its definition
			case len(args) < 5:
				t.Errorf("%s: finish(%s): want (jk, id, from, state, reason[, m])", name, m[1])
				continue
			}
			state, reason := strings.Trim(args[3], "'"), args[4]
			switch {
			case reason == "''":
				if state != flow.StateCompleted {
					t.Errorf("%s: finish(%s): a %s job with no reason", name, m[1], state)
				}
			case strings.HasPrefix(reason, "'"):
				add(name, strings.Trim(reason, "'"), state)
			case reason == "reason" && state == flow.StateArchived && (name == "ack.lua" || name == "claim.lua"):
				passThrough++ // ack.lua's park outcome, claim.lua's park helper
			default:
				t.Errorf("%s: finish(%s): a reason this test does not know where it comes from", name, m[1])
			}
		}
		for _, m := range parkCall.FindAllStringSubmatch(src, -1) {
			add(name, m[1], flow.StateArchived)
		}
	}
	if passThrough != 2 {
		t.Errorf("%d finish calls pass on a park's reason, want 2 (ack.lua, claim.lua)", passThrough)
	}

	// the Go code's park reasons: each construct's reason is a literal, or
	// one of the known pass-throughs (the reason of another construct)
	constructs := []*regexp.Regexp{ // the last matches no code today
		regexp.MustCompile(`Park\{Reason: ([^,}]+)`),                                         // outcome.Park
		regexp.MustCompile(`\bpark\(([^,]+),`),                                               // step's park helper
		regexp.MustCompile(`= store\.CodePark, ([^,\n]+)`),                                   // an ack's code and reason
		regexp.MustCompile(`Outcome: outcomePark, Reason: ([^,}]+)`),                         // an isolated child's reply
		regexp.MustCompile(`case outcomePark:\s+if r\.Reason == "" \{\s+r\.Reason = (".*")`), // its default
		regexp.MustCompile(`Code: store\.CodePark, Reason: ([^,}]+)`),                        // an ack literal
	}
	passOn := map[string]bool{"reason": true, "c.Park.Reason": true, "r.Reason": true}
	found := make([]int, len(constructs))
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src := read(t, path)
		for i, re := range constructs {
			for _, m := range re.FindAllStringSubmatch(src, -1) {
				if strings.Contains(m[0], "park(reason string") {
					continue // its definition
				}
				found[i]++
				expr := strings.TrimSpace(m[1])
				switch {
				case strings.HasPrefix(expr, `"`):
					add(path, strings.Trim(expr, `"`), flow.StateArchived)
				case !passOn[expr]:
					t.Errorf("%s: %s: a park reason this test does not know where it comes from", path, m[0])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range found[:len(found)-1] {
		if n == 0 {
			t.Errorf("no code matches %s: reword the test with the code", constructs[i])
		}
	}
	if d := cmp.Diff(written, listed()); d != "" {
		t.Errorf("admin.Reasons and the reasons the code records differ (-code +list):\n%s", d)
	}
}

// TestReasonsAgreeWithDocs: docs/state-machine.md names, in its
// transition table's Reason column and its park reasons table, the
// reasons admin.Reasons lists, each with its state.
func TestReasonsAgreeWithDocs(t *testing.T) {
	t.Parallel()
	doc := read(t, filepath.Join(root, "docs", "state-machine.md"))
	named := map[string]string{}
	quoted := regexp.MustCompile("`([a-z_]+)`")
	inPark := false
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "#") {
			inPark = l == "### Park reasons"
		}
		cells := strings.Split(l, "|")
		switch {
		case !strings.HasPrefix(l, "| ") || len(cells) < 4:
		case inPark && cells[1] != " Reason ":
			for _, m := range quoted.FindAllStringSubmatch(cells[1], -1) {
				named[m[1]] = flow.StateArchived
			}
		case !inPark && len(cells) == 7:
			for _, m := range quoted.FindAllStringSubmatch(cells[4], -1) {
				named[m[1]] = strings.Trim(strings.TrimSpace(cells[2]), "`")
			}
		}
	}
	if d := cmp.Diff(named, listed()); d != "" {
		t.Errorf("docs/state-machine.md and admin.Reasons differ (-docs +list):\n%s", d)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
