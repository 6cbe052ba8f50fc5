// Package exampleredis connects the examples to Redis: REDIS_URL when it
// is set, else an embedded miniredis, so they run with nothing installed.
package exampleredis

import (
	"fmt"
	"os"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Connect returns a client and a description of where it points.
func Connect() (redis.UniversalClient, string, error) {
	if url := os.Getenv("REDIS_URL"); url != "" {
		opts, err := redis.ParseURL(url)
		if err != nil {
			return nil, "", fmt.Errorf("REDIS_URL: %w", err)
		}
		return redis.NewClient(opts), url, nil
	}
	m, err := miniredis.Run()
	if err != nil {
		return nil, "", err
	}
	return redis.NewClient(&redis.Options{Addr: m.Addr()}), "embedded miniredis at " + m.Addr(), nil
}
