package main

import (
	"net/http"
	"testing"
)

// TestHuntWebUserFlagPasswordFromEnv: `sluice web --help` and docs/web.md
// say --password defaults to $SLUICE_WEB_PASSWORD (the way to keep a
// password out of the process list). With --user on the command line and
// the password in the environment, the environment was not read at all
// (web.Options.LoadEnv reads the pair only when neither is set), and the
// command refused to start: "basic auth needs both User and Password"
// (exit 2), though both were given as documented.
func TestHuntWebUserFlagPasswordFromEnv(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	f.env = map[string]string{"SLUICE_WEB_PASSWORD": "s3cret"}
	addr := freeAddr(t)
	// a refusal prints nothing on stdout: startWeb fails the test with
	// the exit code and stderr
	w := f.startWeb("web", "--addr", addr, "--user", "ops")
	defer w.stop()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	req.SetBasicAuth("ops", "s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET / as ops with the password of SLUICE_WEB_PASSWORD: %d, want 200", resp.StatusCode)
	}
}
