package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEffectsListSaysWhenMoreAreKept: `effects list --limit N` of a queue
// that keeps more than N dead-lettered effects lists N and says that more
// are kept (--json: "more": true); one that lists them all says nothing
// of more. It listed N without a word, as if they were all.
func TestEffectsListSaysWhenMoreAreKept(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.deadEffect("j1")
	f.deadEffect("j2")
	out := f.must("effects", "list", "--queue", "default", "--limit", "1")
	if strings.Count(out, "default:0:j") != 1 || !strings.Contains(out, "more") {
		t.Errorf("effects list --limit 1 of 2 dead effects: %q, want one listed and a word that more are kept", out)
	}
	var got struct {
		Dead []map[string]any `json:"dead_effects"`
		More bool             `json:"more"`
	}
	js := f.must("--json", "effects", "list", "--queue", "default", "--limit", "1")
	if err := json.Unmarshal([]byte(js), &got); err != nil || len(got.Dead) != 1 || !got.More {
		t.Errorf("effects list --json --limit 1 of 2: %q (%v), want one listed and \"more\": true", js, err)
	}
	if out := f.must("effects", "list", "--queue", "default", "--limit", "2"); strings.Count(out, "default:0:j") != 2 || strings.Contains(out, "more") {
		t.Errorf("effects list --limit 2 of 2: %q, want both listed and no word of more", out)
	}
	js = f.must("--json", "effects", "list", "--queue", "default")
	if err := json.Unmarshal([]byte(js), &got); err != nil || len(got.Dead) != 2 || got.More {
		t.Errorf("effects list --json of 2: %q (%v), want both listed, more false", js, err)
	}
}
