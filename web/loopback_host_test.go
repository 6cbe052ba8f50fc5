package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestLoopbackHostForms: a console without authentication answers every
// spelling of a loopback name a local browser may send in Host: a fully
// qualified "localhost." (with or without a port), any case, IPv6 and
// IPv4-mapped loopback addresses.
func TestLoopbackHostForms(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	h, err := Handler(Options{Admin: f.ops})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ host, remote string }{
		{"localhost.:8080", "127.0.0.1:5000"},
		{"localhost.", "127.0.0.1:5000"},
		{"LOCALHOST.:8080", "127.0.0.1:5000"},
		{"[::ffff:127.0.0.1]:8080", "127.0.0.1:5000"},
		{"[::1]:8080", "[::1]:5000"},
		{"LocalHost:8080", "[::1]:5000"},
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host, req.RemoteAddr = tc.host, tc.remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("Host %q from %q: %d, want 200", tc.host, tc.remote, rec.Code)
		}
	}
}
