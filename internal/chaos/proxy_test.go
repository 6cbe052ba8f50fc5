package chaos

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestProxy: bytes pass both ways, Cut closes the live connections, new
// ones are accepted after a cut, and a client of an unreachable upstream
// is hung up on.
func TestProxy(t *testing.T) {
	t.Parallel()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	p, err := NewProxy(echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	roundTrip := func(c net.Conn, r *bufio.Reader, msg string) error {
		if _, err := c.Write([]byte(msg + "\n")); err != nil {
			return err
		}
		got, err := r.ReadString('\n')
		if err == nil && got != msg+"\n" {
			err = errors.New("echoed " + got)
		}
		return err
	}
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c, bufio.NewReader(c)
	}
	a, ra := dial()
	defer a.Close()
	b, rb := dial()
	defer b.Close()
	for _, x := range []struct {
		c net.Conn
		r *bufio.Reader
	}{{a, ra}, {b, rb}} {
		if err := roundTrip(x.c, x.r, "hello"); err != nil {
			t.Fatalf("through the proxy: %v", err)
		}
	}
	if n := p.Cut(); n != 2 {
		t.Errorf("Cut cut %d connections, want 2", n)
	}
	if _, err := ra.ReadString('\n'); !errors.Is(err, io.EOF) {
		t.Errorf("read after the cut: %v, want EOF", err)
	}
	c, rc := dial()
	defer c.Close()
	if err := roundTrip(c, rc, "again"); err != nil {
		t.Fatalf("a new connection after the cut: %v", err)
	}

	echo.Close()
	dead, err := NewProxy(echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	d, err := net.Dial("tcp", dead.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := d.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("read from a proxy whose upstream is down: %v, want EOF", err)
	}
}
