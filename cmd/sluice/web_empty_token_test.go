package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestWebEmptyCredentialRefused: --token, --user or --password given
// empty ("--token $TOKEN" with the variable unset) is refused (exit 2),
// nothing served, as the selector flags refuse an empty value: an empty
// --token served the console with no authentication at all, saying
// nothing of it.
func TestWebEmptyCredentialRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	for _, flag := range []string{"--token", "--user", "--password"} {
		ctx, cancel := context.WithTimeout(f.ctx, 3*time.Second)
		var out, errb bytes.Buffer
		code := f.runCtx(ctx, &out, &errb, "web", "--addr", freeAddr(t), flag, "")
		cancel()
		if code != exitUsage || out.String() != "" || !strings.Contains(errb.String(), flag) || !strings.Contains(errb.String(), "empty") {
			t.Errorf("web %s \"\": exit %d, stdout %q, stderr %q; want exit 2 saying the flag is empty", flag, code, out.String(), errb.String())
		}
	}
}
