package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLinksNoTestCode: the sluice binary links no test code: not the
// testing package, goleak, the test harness (its bench starts Redis with
// internal/redisproc), miniredis, or chromedp (the web console's browser
// test drives Chromium with it); it does link the console.
func TestLinksNoTestCode(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/sluicehq/sluice/web") {
		t.Error("the sluice binary does not link the web console")
	}
	for _, dep := range deps {
		switch {
		case dep == "testing", strings.HasPrefix(dep, "go.uber.org/goleak"),
			strings.HasSuffix(dep, "/internal/redistest"), strings.Contains(dep, "miniredis"), strings.Contains(dep, "chromedp"):
			t.Errorf("the sluice binary links %s", dep)
		}
	}
}
