package testkit

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNotInTheCLI: the harness, which imports testing, is linked into no
// binary; the sluice CLI links the runtime, and with it only the
// runtime's signals (internal/testsignal), which import no test code.
func TestNotInTheCLI(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/sluicehq/sluice/cmd/sluice").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "testing" || strings.HasSuffix(dep, "/internal/testkit") {
			t.Errorf("the sluice binary links %s", dep)
		}
	}
}
