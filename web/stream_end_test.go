package web

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit"
)

// unwrapOnly is an Auth middleware's response writer that exposes the
// one it wraps through Unwrap only, as http.ResponseController reads it.
type unwrapOnly struct{ http.ResponseWriter }

func (u *unwrapOnly) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// TestStreamThroughUnwrappingAuth: behind an Auth middleware that wraps
// the response writer and exposes it through Unwrap (the pattern
// http.ResponseController supports), the live stream streams. A helper's
// audit found it answered 500 "streaming unsupported" there, as it asked
// the wrapper itself for http.Flusher: no page was ever live.
func TestStreamThroughUnwrappingAuth(t *testing.T) {
	t.Parallel()
	mw := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(&unwrapOnly{ResponseWriter: w}, r)
		})
	}
	f := newFixture(t, Options{Auth: mw}, false)
	c := client()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/events", nil)
	testkit.Must(t, err)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.Do(req)
	testkit.Must(t, err)
	defer resp.Body.Close()
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || line != "retry: 3000\n" {
		t.Fatalf("/events through an Unwrap-ing middleware: %d %q, first line %q; want the stream", resp.StatusCode, resp.Header.Get("Content-Type"), line)
	}
}

// TestShutdownEndsStreams: stopping Serve ends an open live stream at
// once and cleanly (the browser's reader sees the response end), and
// Serve returns no error. A helper's audit found the stream open until
// Shutdown's five seconds ran out and the connection was closed under it:
// every stop of a console with a tab open took the whole five seconds.
func TestShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	ln, h, err := Listen("127.0.0.1:0", Options{Admin: f.ops, PollInterval: 200 * time.Millisecond})
	testkit.Must(t, err)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, h) }()
	req, err := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/events", nil)
	testkit.Must(t, err)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	testkit.Must(t, err)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); err != nil || line != "retry: 3000\n" {
		t.Fatalf("stream: %d, first line %q, %v", resp.StatusCode, line, err)
	}
	ended := make(chan error, 1)
	go func() { // a browser tab: reads the stream until it ends
		_, err := io.Copy(io.Discard, r)
		ended <- err
	}()
	stop()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("the stream ended with %v, want a clean end", err)
		}
	case <-time.After(testkit.Timeout):
		t.Fatal("the stream did not end")
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
}

// TestServeClosesIdleKeepAlive: a keep-alive connection that sends no
// next request is closed by the server once its idle timeout runs out
// (here shortened). Serve set only a header timeout: a client that kept
// its connection open and idle held it, and its goroutine, for ever.
func TestServeClosesIdleKeepAlive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	ln, h, err := Listen("127.0.0.1:0", Options{Admin: f.ops})
	testkit.Must(t, err)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln, h, 50*time.Millisecond) }()
	defer func() { stop(); <-served }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	testkit.Must(t, err)
	defer conn.Close()
	testkit.Must(t, conn.SetDeadline(time.Now().Add(testkit.Timeout))) // the test's bound, not the server's
	_, err = io.WriteString(conn, "GET /static/missing HTTP/1.1\r\nHost: "+ln.Addr().String()+"\r\n\r\n")
	testkit.Must(t, err)
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	testkit.Must(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	testkit.Must(t, err)
	resp.Body.Close()
	if resp.Close {
		t.Fatal("the server closed the connection after the response: no keep-alive to test")
	}
	// the next read waits for the server: it closes the idle connection
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("reading an idle keep-alive connection: %v, want EOF (the server closed it)", err)
	}
}
