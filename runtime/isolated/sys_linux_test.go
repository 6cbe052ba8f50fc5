package isolated

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAwaitExitDoesNotReap: awaitExit returns once the child is dead but
// leaves it a zombie (its pid still taken) for reap to collect.
func TestAwaitExitDoesNotReap(t *testing.T) {
	cmd := exec.Command(os.Args[0], "sluice-isolated-test-sleeper") // see TestMain
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &session{cmd: cmd}
	exited := make(chan struct{})
	go func() {
		awaitExit(s)
		close(exited)
	}()
	select {
	case <-exited:
		t.Fatal("awaitExit returned while the child runs")
	default:
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("awaitExit did not return after the child died")
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil || !strings.Contains(string(b), ") Z ") {
		t.Errorf("the child is not a zombie after awaitExit: %q, %v", b, err)
	}
	if ps := s.reap(); ps == nil || ps.String() != "signal: killed" {
		t.Errorf("reaped %v, want signal: killed", ps)
	}
}
