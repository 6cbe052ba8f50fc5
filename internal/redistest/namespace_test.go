package redistest

import (
	"strings"
	"testing"
)

func TestNewNamespaceUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		ns := NewNamespace(t)
		if !strings.HasPrefix(ns, "t") || len(ns) != 13 || strings.ContainsAny(ns, "{}: ") {
			t.Fatalf("bad namespace %q", ns)
		}
		if seen[ns] {
			t.Fatalf("duplicate namespace %q", ns)
		}
		seen[ns] = true
	}
}
