package web_test

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/web"
)

// An application mounts the console in its own mux under /sluice, behind
// its own authentication middleware.
func ExampleHandler() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	c, err := flow.NewClient(rdb, flow.ClientOptions{Partitions: map[string]int{"email": 4}})
	if err != nil {
		log.Fatal(err)
	}
	requireStaff := func(next http.Handler) http.Handler { return next } // the application's own check
	h, err := web.Handler(web.Options{Admin: admin.New(c), Prefix: "/sluice", Auth: requireStaff, HideArgs: true})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/sluice/", h)
	_ = http.ListenAndServe("127.0.0.1:8080", mux)
}

// A program serves the console alone on loopback until ctx ends, with a
// token from the environment.
func ExampleListenAndServe() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	c, err := flow.NewClient(rdb, flow.ClientOptions{})
	if err != nil {
		log.Fatal(err)
	}
	o := web.Options{Admin: admin.New(c)}
	o.LoadEnv(os.Getenv) // SLUICE_WEB_TOKEN, SLUICE_WEB_USER, SLUICE_WEB_PASSWORD
	if err := web.ListenAndServe(context.Background(), "127.0.0.1:8080", o); err != nil {
		log.Fatal(err)
	}
}
