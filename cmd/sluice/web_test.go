package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// freeAddr is a loopback address with a port free a moment ago
// (web.ListenAndServe does not report the port it bound).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// stillServing fails t when the console whose overview lists queue still
// answers on addr. A connection alone does not say so: the tests run in
// parallel, and another one's server may have been given the port since.
func stillServing(t *testing.T, addr, queue string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	conn.Close()
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode == http.StatusOK && strings.Contains(string(b), queue) {
		t.Fatal("still listening after Ctrl-C")
	}
}

// webRun is a sluice web command running until cancel.
type webRun struct {
	cancel context.CancelFunc
	line   string // what it printed first on stdout
	done   chan int
	errb   bytes.Buffer
}

// startWeb runs sluice with args and waits for its first line of stdout.
func (f *fixture) startWeb(args ...string) *webRun {
	f.t.Helper()
	ctx, cancel := context.WithCancel(f.ctx)
	w := &webRun{cancel: cancel, done: make(chan int, 1)}
	pr, pw := io.Pipe()
	go func() {
		code := f.runCtx(ctx, pw, &w.errb, args...)
		pw.Close()
		w.done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr) //nolint:errcheck // the rest, if any
	if err != nil {
		cancel()
		f.t.Fatalf("sluice %q: no line on stdout (%v); exit %d, stderr %q", args, err, <-w.done, w.errb.String())
	}
	w.line = line
	return w
}

// stop cancels the command (Ctrl-C) and returns its exit code.
func (w *webRun) stop() int {
	w.cancel()
	return <-w.done
}

// get fetches url with the header h (name: value, "" for none).
func get(t *testing.T, url, h string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if name, v, ok := strings.Cut(h, ": "); ok {
		req.Header.Set(name, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestWebServes: sluice web serves the console on --addr once it says
// so, its overview showing the registered queues; the token from
// $SLUICE_WEB_TOKEN guards it, under --prefix; cancelling (Ctrl-C) stops
// it with exit 0.
func TestWebServes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	if _, _, err := f.st.RegisterLayout(f.ctx, "mailq", 2); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	w := f.startWeb("web", "--addr", addr, "--poll", "200ms")
	if want := fmt.Sprintf("serving the console of namespace %q at http://%s/ until interrupted\n", f.ns, addr); w.line != want {
		t.Errorf("first line %q, want %q", w.line, want)
	}
	code, body := get(t, "http://"+addr+"/", "")
	if code != http.StatusOK || !strings.Contains(body, "mailq") {
		t.Errorf("overview: HTTP %d, mailq shown %v", code, strings.Contains(body, "mailq"))
	}
	if code := w.stop(); code != exitOK || w.errb.Len() > 0 {
		t.Fatalf("after Ctrl-C: exit %d, stderr %q", code, w.errb.String())
	}
	stillServing(t, addr, "mailq")

	f.env = map[string]string{"SLUICE_WEB_TOKEN": "s3cret"}
	addr = freeAddr(t)
	w = f.startWeb("web", "--addr", addr, "--prefix", "/ops")
	if !strings.Contains(w.line, " at http://"+addr+"/ops/ ") {
		t.Errorf("first line %q does not name the prefix", w.line)
	}
	if code, _ := get(t, "http://"+addr+"/ops/", ""); code == http.StatusOK {
		t.Error("the overview answered without the token")
	}
	if code, body := get(t, "http://"+addr+"/ops/", "Authorization: Bearer s3cret"); code != http.StatusOK || !strings.Contains(body, "mailq") {
		t.Errorf("overview with the token: HTTP %d", code)
	}
	if code := w.stop(); code != exitOK {
		t.Fatalf("after Ctrl-C: exit %d, stderr %q", code, w.errb.String())
	}
}

// TestWebErrors: an address beyond loopback without authentication, and
// every other invalid option, exits 2 before serving (testdata/web.golden
// holds what each prints); an address another server holds exits 1,
// never having said it serves.
func TestWebErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	tr := &transcript{f: f}
	tr.run(exitUsage, "web", "--addr", "0.0.0.0:1")
	tr.run(exitUsage, "web", "--addr", ":1")
	tr.run(exitUsage, "web", "--addr", "127.0.0.1:0")
	tr.run(exitUsage, "web", "--addr", "localhost")
	tr.run(exitUsage, "web", "--addr", "127.0.0.1:http")
	tr.run(exitUsage, "web", "--addr", "127.0.0.1:1", "--prefix", "ops/")
	tr.run(exitUsage, "web", "--addr", "127.0.0.1:1", "--user", "ann")
	tr.run(exitUsage, "web", "--addr", "127.0.0.1:1", "--password", "pw")
	tr.run(exitUsage, "web", "--addr", "127.0.0.1:1", "--poll", "10ms")
	tr.run(exitUsage, "web", "--addr", "127.0.0.1:1", "--poll", "0")
	tr.run(exitUsage, "web", "extra")
	golden(t, "web", tr.b.String())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, errs, code := f.sluice("web", "--addr", ln.Addr().String())
	if code != exitError || out != "" || !strings.Contains(errs, "address already in use") {
		t.Fatalf("a taken address: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestWebHelp: sluice web --help says where the console's queues come
// from, the namespace's registry, and that --partitions only checks it.
func TestWebHelp(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	help := strings.Join(strings.Fields(f.must("web", "--help")), " ")
	for _, want := range []string{"lists the queues registered in the namespace", "--partitions, as for every command, only checks"} {
		if !strings.Contains(help, want) {
			t.Errorf("sluice web --help does not say %q:\n%s", want, help)
		}
	}
	if strings.Contains(help, "of the live workers") {
		t.Errorf("sluice web --help still says the queues come from the live workers:\n%s", help)
	}
}

// TestWebSignal: the sluice binary, a real process, serving the console
// stops with exit 0 on SIGINT (Ctrl-C) and on SIGTERM.
func TestWebSignal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate() // a namespace with queues: the console of one without is refused
	bin := filepath.Join(t.TempDir(), "sluice")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		addr := freeAddr(t)
		cmd := exec.Command(bin, "web", "--addr", addr)
		cmd.Env = append(os.Environ(), "REDIS_URL="+f.url, "SLUICE_NAMESPACE="+f.ns)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "serving the console") {
			cmd.Process.Kill()
			t.Fatalf("%v: first line %q, %v; stderr %q", sig, line, err, errb.String())
		}
		if code, _ := get(t, "http://"+addr+"/", ""); code != http.StatusOK {
			t.Errorf("%v: overview HTTP %d", sig, code)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil || cmd.ProcessState.ExitCode() != exitOK {
			t.Fatalf("%v: %v, exit %d, stderr %q", sig, err, cmd.ProcessState.ExitCode(), errb.String())
		}
	}
}

// TestWebWarnsOfAnEmptyNamespace: the console of a namespace with no queue
// (a mistyped --namespace, most often) says so on stderr at once, and
// serves: one deployed before any worker has run must not restart in a
// loop until one has.
func TestWebWarnsOfAnEmptyNamespace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w := f.startWeb("--namespace", f.ns+"-typo", "web", "--addr", freeAddr(t))
	if !strings.HasPrefix(w.line, "serving the console") {
		t.Errorf("first line %q", w.line)
	}
	if want := "sluice: warning: no queues in namespace \"" + f.ns + "-typo\""; !strings.HasPrefix(w.errb.String(), want) {
		t.Errorf("stderr %q, want it to start %q", w.errb.String(), want)
	}
	if code := w.stop(); code != exitOK {
		t.Errorf("exit %d after Ctrl-C, want 0", code)
	}
}
