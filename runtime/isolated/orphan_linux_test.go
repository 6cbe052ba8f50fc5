package isolated

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// TestWorkerDiesAfterReply: the worker dies after reading a Main child's
// reply and before it kills the child's process group (this test plays
// the worker: its ends of the pipes close). The child kills its group as
// its stdin ends, so the process its handler started does not outlive the
// attempt. Before, Main exited right after its reply, and the grandchild,
// adopted by init, lived on with no one left to kill it. A main of its
// own that calls Serve and then Exit does the same.
func TestWorkerDiesAfterReply(t *testing.T) {
	t.Parallel()
	// bgArg: isolated.Main; bgOwnArg: a main of its own that calls Serve,
	// then Exit
	for _, arg := range []string{"sluice-isolated-test-bg", "sluice-isolated-test-bg-own"} {
		t.Run(arg, func(t *testing.T) {
			t.Parallel()
			workerDiesAfterReply(t, arg)
		})
	}
}

func workerDiesAfterReply(t *testing.T, arg string) {
	cmd := exec.Command(os.Args[0], arg)
	cmd.SysProcAttr = procAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	payload, err := msgpack.Marshal(struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFrame(stdin, frameStart, startMsg{NS: "t", ID: "default:0:x", Queue: "default", Kind: "bg", Payload: payload}); err != nil {
		t.Fatal(err)
	}
	typ, body, err := readFrame(stdout, 1<<20, childFrames)
	if err != nil || typ != frameReply {
		t.Fatalf("reply: %q, %v", typ, err)
	}
	var r replyMsg
	if err := decode(body, &r); err != nil || r.Outcome != outcomeOK {
		t.Fatalf("reply %+v, %v; want ok", r, err)
	}
	_ = stdin.Close() // the worker dies
	_ = cmd.Wait()
	i := strings.Index(stderr.String(), "grandchild ")
	if i < 0 {
		t.Fatalf("no grandchild in the child's stderr %q", stderr.String())
	}
	gc, err := strconv.Atoi(strings.Fields(stderr.String()[i+len("grandchild "):])[0])
	if err != nil {
		t.Fatal(err)
	}
	// polled: the grandchild dies on its own time (a zombie, dead, waits
	// for init to reap it)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(gc) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the grandchild %d outlives the attempt: %s", gc, b)
		}
	}
}
