package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestWebUserFlagPasswordFromEnv: `sluice web --help` and docs/web.md
// say --password defaults to $SLUICE_WEB_PASSWORD (the way to keep a
// password out of the process list). With --user on the command line and
// the password in the environment, the environment was not read at all
// (web.Options.LoadEnv read the pair only when neither was set), and the
// command refused to start: "basic auth needs both User and Password"
// (exit 2), though both were given as documented.
func TestWebUserFlagPasswordFromEnv(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	f.env = map[string]string{"SLUICE_WEB_PASSWORD": "s3cret"}
	addr := freeAddr(t)
	// a refusal prints nothing on stdout: startWeb fails the test with
	// the exit code and stderr
	w := f.startWeb("web", "--addr", addr, "--user", "ops")
	defer w.stop()
	for pass, want := range map[string]int{"s3cret": http.StatusOK, "wrong": http.StatusUnauthorized} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		req.SetBasicAuth("ops", pass)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET / as ops with password %q (SLUICE_WEB_PASSWORD is s3cret): %d, want %d", pass, resp.StatusCode, want)
		}
	}
}

// TestWebUserWithoutPasswordRefused: each of user and password falls
// back to its variable on its own, so a user from either source with no
// password from either is refused (exit 2), saying where a password is
// given; so is a password with no user.
func TestWebUserWithoutPasswordRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--user", "ops"}, `user "ops" (--user or $SLUICE_WEB_USER) has no password: give --password or set $SLUICE_WEB_PASSWORD`},
		{map[string]string{"SLUICE_WEB_USER": "ops"}, nil, `user "ops" (--user or $SLUICE_WEB_USER) has no password`},
		{map[string]string{"SLUICE_WEB_PASSWORD": "s3cret"}, nil, `password (--password or $SLUICE_WEB_PASSWORD) but no user: give --user or set $SLUICE_WEB_USER`},
	} {
		f := newFixture(t)
		f.populate()
		f.env = tc.env
		out, errs, code := f.sluice(append([]string{"web", "--addr", freeAddr(t)}, tc.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("web %q, environment %v: exit %d, stdout %q, stderr %q; want exit 2 saying %q", tc.args, tc.env, code, out, errs, tc.want)
		}
	}
}
