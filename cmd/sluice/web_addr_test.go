package main

import (
	"fmt"
	"net"
	"net/http"
	"testing"
)

// TestWebSaysAnAddressABrowserOpens: `sluice web --addr :PORT` (every
// interface, with a token) says where the console is as
// http://localhost:PORT/, which answers; it said http://:PORT/, which no
// browser opens.
func TestWebSaysAnAddressABrowserOpens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, port, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	w := f.startWeb("web", "--addr", ":"+port, "--token", "s3cret")
	defer w.stop()
	want := fmt.Sprintf("serving the console of namespace %q at http://localhost:%s/ until interrupted\n", f.ns, port)
	if w.line != want {
		t.Fatalf("first line %q, want %q", w.line, want)
	}
	if code, _ := get(t, "http://localhost:"+port+"/", "Authorization: Bearer s3cret"); code != http.StatusOK {
		t.Errorf("the console at the address said: HTTP %d", code)
	}
}
