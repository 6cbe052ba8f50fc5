// Command model measures the Redis cost of a no-op job's path (enqueue,
// claim, ack of a completion, the job deleted) through Sluice's scripts
// and through the proposed data model of docs/design/hot-path-data-model.md
// (model.lua), on one private redis-server, in alternating rounds.
//
//	go run ./bench/model [-jobs 40000] [-rounds 3] [-paths sluice,model3] [-typical]
//
// Every path runs the same batches in the same order (enqueue 100 jobs per
// call, claim 50, ack what was claimed) with no worker around them, so the
// figures are what the scripts cost Redis, not a worker's throughput.
// CPU time on a shared VM varies by a third from run to run; for a
// comparison that repeats, count instructions (scripts/redis-ir.sh, one
// path per run). The slow log stays off unless -typical asks for each
// function's median call: Redis logs every command of a script too, so
// with it on a path pays for its log entries by its commands.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisproc"
)

// verbose: -v; typical: -typical.
var verbose, typical bool

func main() {
	jobs := flag.Int("jobs", 40000, "no-op jobs per path and round")
	rounds := flag.Int("rounds", 3, "rounds; each runs every path, a different one first")
	flag.BoolVar(&typical, "typical", false, "log every command in the slow log, and report each function at its median call "+
		"(the log's entries, one per command of a script too, then cost each path by its commands: read CPU and memory from a run without)")
	flag.BoolVar(&verbose, "v", false, "with -typical, print each function's median call per phase")
	only := flag.String("paths", "sluice,model,model2,model3", "the paths to run, comma-separated; the first is the baseline")
	flag.Parse()
	paths, err := pathsNamed(*only)
	if err == nil {
		err = run(paths, *jobs, *rounds)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "model:", err)
		os.Exit(1)
	}
}

// pathsNamed is the paths a -paths flag names, in its order.
func pathsNamed(list string) ([]path, error) {
	all := []path{sluicePath{}, modelPath{"model"}, modelPath{"model2"}, modelPath{"model3"}}
	var out []path
	for name := range strings.SplitSeq(list, ",") {
		i := slices.IndexFunc(all, func(p path) bool { return p.name() == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("-paths: no path %q (there are sluice, model, model2, model3)", name)
		}
		out = append(out, all[i])
	}
	return out, nil
}

func run(paths []path, jobs, rounds int) error {
	if jobs < 1 || rounds < 1 {
		return fmt.Errorf("-jobs and -rounds must be positive (got %d, %d)", jobs, rounds)
	}
	srv, err := redisproc.StartServer()
	if err != nil {
		return fmt.Errorf("starting redis-server: %w", err)
	}
	defer srv.Close()
	// a read timeout for SLOWLOG GET of up to slowLogLen entries from a
	// redis-server under callgrind (scripts/redis-ir.sh), tens of times
	// slower than bare: it timed out at go-redis's default 3 s
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 5 * time.Minute})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := loadModel(ctx, rdb); err != nil {
		return err
	}
	// every command in the slow log, for typicalCalls; else none
	log := [][2]string{{"slowlog-log-slower-than", "-1"}}
	if typical {
		log = [][2]string{{"slowlog-log-slower-than", "0"}, {"slowlog-max-len", strconv.Itoa(slowLogLen)}}
	}
	for _, kv := range log {
		if err := rdb.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			return fmt.Errorf("CONFIG SET %s: %w", kv[0], err)
		}
	}
	got := map[string][]cost{}
	for r := range rounds {
		// each path runs first in turn: a machine that slows during a round
		// does not favour one path
		for k := range paths {
			p := paths[(r+k)%len(paths)]
			c, err := measure(ctx, rdb, p, jobs, fmt.Sprintf("r%d", r), typical)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", p.name(), r+1, err)
			}
			fmt.Fprintf(os.Stderr, "round %d %-6s %s\n", r+1, p.name(), c)
			got[p.name()] = append(got[p.name()], c)
		}
	}
	report(paths, got, jobs, rounds)
	return nil
}

// report prints the median of each figure per path, and each model's
// against Sluice's (the first path).
func report(paths []path, got map[string][]cost, jobs, rounds int) {
	fmt.Printf("%d no-op jobs per path and round, %d rounds, medians (µs per job unless named)\n\n", jobs, rounds)
	head, rule := "| figure |", "|---|"
	for _, p := range paths {
		head += " " + p.name() + " |"
		rule += "---|"
	}
	for _, p := range paths[1:] {
		head += " " + p.name() + "/" + paths[0].name() + " |"
		rule += "---|"
	}
	fmt.Println(head)
	fmt.Println(rule)
	for _, f := range figures {
		if f.typical && !typical {
			continue
		}
		row := "| " + f.name + " |"
		base := median(got[paths[0].name()], f.get)
		for _, p := range paths {
			row += fmt.Sprintf(" %.2f |", median(got[p.name()], f.get))
		}
		for _, p := range paths[1:] {
			row += fmt.Sprintf(" %.2f |", median(got[p.name()], f.get)/base)
		}
		fmt.Println(row)
	}
}

var figures = []struct {
	name    string
	get     func(cost) float64
	typical bool // from the slow log: -typical
}{
	{"Redis CPU, enqueue", func(c cost) float64 { return c.enqueueCPU }, false},
	{"Redis CPU, claim + ack", func(c cost) float64 { return c.runCPU }, false},
	{"Redis CPU, the whole path", func(c cost) float64 { return c.enqueueCPU + c.runCPU }, false},
	{"FCALL time, the whole path", func(c cost) float64 { return c.fcall }, false},
	{"… enqueue, each function at its median call", func(c cost) float64 { return c.typicalEnq }, true},
	{"… claim + ack, each function at its median call", func(c cost) float64 { return c.typicalRun }, true},
	{"commands per job", func(c cost) float64 { return c.commands }, false},
	{"bytes of memory per ready job (used_memory, call records included)", func(c cost) float64 { return c.memory }, false},
}

func median(cs []cost, get func(cost) float64) float64 {
	v := make([]float64, len(cs))
	for i, c := range cs {
		v[i] = get(c)
	}
	sort.Float64s(v)
	return v[len(v)/2]
}
