package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow/admin"
)

// TestEffectsRedriveLimitCountsEffects: the limit of effects redrive
// counts dead effects, as redrive's counts jobs: one ID given more times
// than the limit (a list pasted twice, xargs repeating one) is one effect,
// sent back once. It was refused as "1001 IDs, at most 1000", a usage
// error (exit 2) for what is one effect, where redrive, release and
// run-now take the same list.
func TestEffectsRedriveLimitCountsEffects(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bad := f.deadEffect("j1")
	out := f.must("effects", "list", "--queue", "default")
	id := strings.Fields(strings.Split(out, "\n")[1])[0]
	f.st.Client().Del(f.ctx, bad)
	args := append([]string{"effects", "redrive"}, slices.Repeat([]string{id}, admin.MaxRedriveIDs+1)...)
	out, errs, code := f.sluice(args...)
	if code != exitOK || strings.Count(out, id) != 1 {
		t.Fatalf("effects redrive of one ID given %d times: exit %d, stdout %q, stderr %q; want it sent back once, exit 0",
			admin.MaxRedriveIDs+1, code, out, errs)
	}
	// more distinct IDs than the limit are still refused
	many := []string{"effects", "redrive"}
	for i := range admin.MaxRedriveIDs + 1 {
		many = append(many, id+strings.Repeat("x", i%3)+string(rune('a'+i%26))+strings.Repeat("y", i/26))
	}
	if _, errs, code := f.sluice(many...); code != exitUsage || !strings.Contains(errs, "at most") {
		t.Fatalf("effects redrive of %d IDs: exit %d, stderr %q", admin.MaxRedriveIDs+1, code, errs)
	}
}
