package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestEffectsListTimesInUTC: `effects list` gives a dead-lettered effect's
// time in UTC, with --json as every other time the CLI prints is (with a
// "Z"), and an empty list as [], not null. The time was the host's local
// time under --json (an offset other than Z on a host not set to UTC).
// Not parallel: it sets the process's local time zone, which the parallel
// tests, run after it, do not see changed.
func TestEffectsListTimesInUTC(t *testing.T) {
	local := time.Local
	time.Local = time.FixedZone("UTC+9", 9*3600)
	t.Cleanup(func() { time.Local = local })
	f := newFixture(t)
	if _, _, err := f.st.RegisterLayout(f.ctx, "default", 1); err != nil {
		t.Fatal(err)
	}
	if out := f.must("--json", "effects", "list", "--queue", "default"); !strings.Contains(out, `"dead_effects": []`) {
		t.Errorf("effects list --json with none: %q, want dead_effects []", out)
	}
	f.deadEffect("j1")
	var got struct {
		Dead []map[string]any `json:"dead_effects"`
	}
	out := f.must("--json", "effects", "list", "--queue", "default")
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Dead) != 1 {
		t.Fatalf("effects list --json: %q (%v), want one dead effect", out, err)
	}
	if at, _ := got.Dead[0]["at"].(string); !strings.HasSuffix(at, "Z") {
		t.Errorf("effects list --json: at %q, want UTC (ending in Z) as every other time --json prints", at)
	}
}

// TestEffectsListJSONKeysSnakeCase: `effects list --json` names a dead
// effect's fields in snake case, as every other --json output of the CLI
// does (job_id as jobs show --json's "dead_effects" sits beside "id").
// They were Go's field names (ID, JobID, At).
func TestEffectsListJSONKeysSnakeCase(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.deadEffect("j1")
	var got struct {
		Dead []map[string]any `json:"dead_effects"`
	}
	out := f.must("--json", "effects", "list", "--queue", "default")
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Dead) != 1 {
		t.Fatalf("effects list --json: %q (%v), want one dead effect", out, err)
	}
	for _, k := range []string{"id", "job_id", "error", "op", "key", "args", "at"} {
		if _, ok := got.Dead[0][k]; !ok {
			t.Errorf("effects list --json: %v, want key %q", got.Dead[0], k)
		}
	}
}
