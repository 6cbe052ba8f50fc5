package web

import (
	"errors"
	"strings"
	"testing"
)

// TestLoadEnvEachOnItsOwn: LoadEnv fills each of Token, User and
// Password from its variable where it is not set, independently of the
// others: a User set in code takes its Password from EnvPassword. It read
// the user and password as a pair, only when neither was set, so a User
// given on a command line never got the password of the environment.
func TestLoadEnvEachOnItsOwn(t *testing.T) {
	t.Parallel()
	vars := map[string]string{EnvToken: "tok", EnvUser: "env-user", EnvPassword: "env-pass"}
	getenv := func(k string) string { return vars[k] }
	for _, tc := range []struct {
		in, want Options
	}{
		{Options{}, Options{Token: "tok", User: "env-user", Password: "env-pass"}},
		{Options{User: "ops"}, Options{Token: "tok", User: "ops", Password: "env-pass"}},
		{Options{Password: "pw"}, Options{Token: "tok", User: "env-user", Password: "pw"}},
		{Options{Token: "t", User: "ops", Password: "pw"}, Options{Token: "t", User: "ops", Password: "pw"}},
	} {
		got := tc.in
		got.LoadEnv(getenv)
		if got.Token != tc.want.Token || got.User != tc.want.User || got.Password != tc.want.Password {
			t.Errorf("LoadEnv of token %q, user %q, password %q: %q, %q, %q; want %q, %q, %q", tc.in.Token, tc.in.User, tc.in.Password,
				got.Token, got.User, got.Password, tc.want.Token, tc.want.User, tc.want.Password)
		}
	}
}

// TestBasicAuthHalfRefused: a User without a Password, or a Password
// without a User, is ErrOptions saying which is missing.
func TestBasicAuthHalfRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{ops: adminOps{}, User: "ops"}, `User "ops" has no Password`},
		{Options{ops: adminOps{}, Password: "pw"}, "a Password is set, no User"},
	} {
		_, err := tc.o.withDefaults()
		if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("user %q, password %q: %v; want ErrOptions saying %q", tc.o.User, tc.o.Password, err, tc.want)
		}
	}
}
