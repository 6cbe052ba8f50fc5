package store_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestOwedMaxIsTheScript: the Go side's bound on owed windows (a
// scheduler's rounds, the operator's docs) is the one the schedule script
// keeps. They were copied by hand before.
func TestOwedMaxIsTheScript(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../../lua/schedule.lua")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^local OWED_MAX = (\d+)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("lua/schedule.lua declares no OWED_MAX")
	}
	if got := string(m[1]); got != fmt.Sprint(store.OwedMax) {
		t.Errorf("lua/schedule.lua's OWED_MAX is %s, store.OwedMax %d", got, store.OwedMax)
	}
	doc, err := os.ReadFile("../../flow/admin/schedules.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("(%d pauses'", store.OwedMax); !strings.Contains(string(doc), want) {
		t.Errorf("ResumeSchedule's doc does not say %q", want)
	}
}
