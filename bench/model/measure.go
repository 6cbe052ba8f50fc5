package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
)

// cost is one path's round, per job.
type cost struct {
	enqueueCPU float64 // µs of redis-server CPU enqueuing
	runCPU     float64 // µs of redis-server CPU claiming and acking
	fcall      float64 // µs inside FCALL (commandstats), the whole path
	typicalEnq float64 // FCALL µs of enqueue, each function at its median call (SLOWLOG)
	typicalRun float64 // the same for claim and ack
	commands   float64 // commands Redis ran, scripts' own included
	memory     float64 // bytes of used_memory per enqueued job, before the claims
}

func (c cost) String() string {
	return fmt.Sprintf("enqueue %.2f µs, claim+ack %.2f µs, FCALL %.2f µs (typical %.2f + %.2f), %.2f commands, %.0f bytes per job",
		c.enqueueCPU, c.runCPU, c.fcall, c.typicalEnq, c.typicalRun, c.commands, c.memory)
}

const (
	enqueueBatch = 100
	claimBatch   = 50
)

// measure enqueues jobs no-op jobs on a fresh namespace, then claims and
// completes them all, and reads what Redis spent. With typical, run has
// set the slow log to keep every command, and the FCALLs' median times
// are read from it. Redis logs the commands of scripts too, an entry each,
// so the log costs a path CPU and memory by its commands: its CPU and
// memory figures are the ones to read from a run without it.
func measure(ctx context.Context, rdb *redis.Client, p path, jobs int, round string, typical bool) (cost, error) {
	s := p.open(rdb, "model-"+p.name()+"-"+round)
	if typical {
		if err := rdb.SlowLogReset(ctx).Err(); err != nil {
			return cost{}, err
		}
	}
	before, err := readStats(ctx, rdb)
	if err != nil {
		return cost{}, err
	}
	ids := make([]string, 0, enqueueBatch)
	for left := jobs; left > 0; left -= len(ids) {
		ids = ids[:0]
		for range min(left, enqueueBatch) {
			ids = append(ids, keys.NewLocal())
		}
		if err := s.enqueue(ctx, ids); err != nil {
			return cost{}, fmt.Errorf("enqueue: %w", err)
		}
	}
	enqueued, err := readStats(ctx, rdb)
	if err != nil {
		return cost{}, err
	}
	var typicalEnq, typicalRun float64
	if typical {
		if typicalEnq, err = typicalCalls(ctx, rdb); err != nil {
			return cost{}, err
		}
	}
	// the claims' figures start here: reading the slow log is no part of
	// them, and its entries are gone from the memory
	ready, err := readStats(ctx, rdb)
	if err != nil {
		return cost{}, err
	}
	for done := 0; done < jobs; {
		leases, err := s.claim(ctx, claimBatch)
		if err != nil {
			return cost{}, fmt.Errorf("claim: %w", err)
		}
		if len(leases) == 0 {
			return cost{}, fmt.Errorf("the partition ran dry after %d of %d jobs", done, jobs)
		}
		if err := s.complete(ctx, leases); err != nil {
			return cost{}, fmt.Errorf("ack: %w", err)
		}
		done += len(leases)
	}
	after, err := readStats(ctx, rdb)
	if err != nil {
		return cost{}, err
	}
	if typical {
		if typicalRun, err = typicalCalls(ctx, rdb); err != nil {
			return cost{}, err
		}
	}
	n := float64(jobs)
	return cost{
		typicalEnq: typicalEnq / n,
		typicalRun: typicalRun / n,
		enqueueCPU: (enqueued.cpu - before.cpu) * 1e6 / n,
		runCPU:     (after.cpu - ready.cpu) * 1e6 / n,
		fcall:      float64(after.fcallUsec-before.fcallUsec) / n,
		commands:   float64(enqueued.commands-before.commands+after.commands-ready.commands) / n,
		memory:     float64(ready.memory-before.memory) / n,
	}, nil
}

type stats struct {
	cpu       float64 // seconds, user + system
	fcallUsec int64
	commands  int64
	memory    int64 // used_memory
}

// readStats reads redis-server's CPU time, FCALL time, command count and
// memory.
func readStats(ctx context.Context, rdb *redis.Client) (stats, error) {
	info, err := rdb.Info(ctx, "cpu", "stats", "commandstats", "memory").Result()
	if err != nil {
		return stats{}, fmt.Errorf("INFO: %w", err)
	}
	var st stats
	for line := range strings.SplitSeq(info, "\r\n") {
		name, v, _ := strings.Cut(line, ":")
		switch name {
		case "used_cpu_user", "used_cpu_sys":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return stats{}, fmt.Errorf("INFO %s: %w", name, err)
			}
			st.cpu += f
		case "total_commands_processed":
			st.commands, _ = strconv.ParseInt(v, 10, 64)
		case "used_memory":
			st.memory, _ = strconv.ParseInt(v, 10, 64)
		case "cmdstat_fcall":
			for field := range strings.SplitSeq(v, ",") {
				if u, ok := strings.CutPrefix(field, "usec="); ok {
					st.fcallUsec, _ = strconv.ParseInt(u, 10, 64)
				}
			}
		}
	}
	return st, nil
}

// typicalCalls is the time of the FCALLs in the slow log (every call: the
// server logs each command) as if each had taken its function's median
// time, and empties the log: a figure that a few calls slowed by the
// machine's neighbours do not move.
func typicalCalls(ctx context.Context, rdb *redis.Client) (float64, error) {
	logs, err := rdb.SlowLogGet(ctx, slowLogLen).Result()
	if err != nil {
		return 0, fmt.Errorf("SLOWLOG GET: %w", err)
	}
	if err := rdb.SlowLogReset(ctx).Err(); err != nil {
		return 0, fmt.Errorf("SLOWLOG RESET: %w", err)
	}
	if len(logs) >= slowLogLen {
		return 0, fmt.Errorf("the slow log filled up (%d entries): fewer -jobs", len(logs))
	}
	byFn := map[string][]time.Duration{}
	for _, l := range logs {
		if len(l.Args) > 1 && strings.EqualFold(l.Args[0], "fcall") {
			byFn[l.Args[1]] = append(byFn[l.Args[1]], l.Duration)
		}
	}
	total := 0.0
	for fn, ds := range byFn {
		slices.Sort(ds)
		med := ds[len(ds)/2]
		total += float64(med.Microseconds()) * float64(len(ds))
		if verbose {
			fmt.Fprintf(os.Stderr, "  %.12s: %d calls, median %d µs\n", fn, len(ds), med.Microseconds())
		}
	}
	return total, nil
}

// slowLogLen is how many entries the private server's slow log keeps.
const slowLogLen = 200000
