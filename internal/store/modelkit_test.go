package store_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// What the randomised model tests (TestModel, TestFlowModel) share: their
// seeds and lengths from the environment, their choice of operation, and
// the log of the last operations a failure shows.

// envSeed is the seed environment variable name sets, else one from the
// time.
func envSeed(t *testing.T, name string) uint64 {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return uint64(time.Now().UnixNano())
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return v
}

// envSteps is the positive count environment variable name sets, else def.
func envSteps(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return v
}

// weightedOp is an operation a model test picks with weight w.
type weightedOp struct {
	name string
	w    int
	run  func()
}

// runWeighted runs one of ops, picked by rng by weight, and counts it.
func runWeighted(rng *rand.Rand, counts map[string]int, ops []weightedOp) {
	total := 0
	for _, o := range ops {
		total += o.w
	}
	x := rng.IntN(total)
	for _, o := range ops {
		if x < o.w {
			counts[o.name]++
			o.run()
			return
		}
		x -= o.w
	}
}

// keepLast appends line to log and keeps its last n lines: environment
// variable env's count when it sets one, else def.
func keepLast(log []string, line, env string, def int) []string {
	if n, err := strconv.Atoi(os.Getenv(env)); err == nil && n > 0 {
		def = n
	}
	log = append(log, line)
	if len(log) > def {
		log = log[len(log)-def:]
	}
	return log
}
