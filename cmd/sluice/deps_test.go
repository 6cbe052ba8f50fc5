package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoTestCode: the sluice binary links no test code: not the
// testing package, goleak, the test harness (its bench starts Redis with
// internal/redisproc) or miniredis.
func TestLinksNoTestCode(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "testing", strings.HasPrefix(dep, "go.uber.org/goleak"),
			strings.HasSuffix(dep, "/internal/redistest"), strings.Contains(dep, "miniredis"):
			t.Errorf("the sluice binary links %s", dep)
		}
	}
}
