package admin_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
)

var env redistest.Env

func TestMain(m *testing.M) { redistest.Main(m, &env, false) }

type email struct {
	To string `msgpack:"to"`
}

func (email) Kind() string { return "email" }
