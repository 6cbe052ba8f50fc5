package harness

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// sample is what Redis and our clients had done at one instant: the
// counters whose difference over a run is the run's cost.
type sample struct {
	commands      int64            // INFO stats total_commands_processed
	cpu           float64          // INFO cpu used_cpu_user + used_cpu_sys, seconds
	calls         map[string]int64 // INFO commandstats calls, by command
	usec          map[string]int64 // INFO commandstats usec, by command
	producerTrips int64
	workerTrips   int64
	workerScripts map[string]int64 // worker round trips by script
	goCPU         time.Duration    // this process: producers and worker
}

// takeSample reads INFO (stats, cpu and commandstats in one call on the
// uncounted admin client, on every master of a cluster, summed) and the
// round-trip counters.
//
// total_commands_processed counts the commands a Lua script runs as well as
// the EVALSHA that ran it, so commands per job measures the work Redis
// does, not the traffic. The INFO call of the previous sample is counted
// too: one command per node and run, noise at any useful job count.
func (t *target) takeSample(ctx context.Context) (sample, error) {
	s := sample{
		calls:         map[string]int64{},
		usec:          map[string]int64{},
		producerTrips: t.producer.trips.Load(),
		workerTrips:   t.worker.trips.Load(),
		workerScripts: t.worker.scriptTrips(),
		goCPU:         processCPU(),
	}
	infos, err := t.infos(ctx, "stats", "cpu", "commandstats")
	if err != nil {
		return sample{}, err
	}
	for _, info := range infos {
		s.add(info)
	}
	return s, nil
}

// infos is INFO sections of every node: the Redis, or each master of a
// cluster.
func (t *target) infos(ctx context.Context, sections ...string) ([]string, error) {
	var (
		mu  sync.Mutex
		out []string
	)
	err := forEachNode(ctx, t.admin, func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, sections...).Result()
		if err != nil {
			return fmt.Errorf("INFO on %s: %w", c.Options().Addr, err)
		}
		mu.Lock()
		out = append(out, info)
		mu.Unlock()
		return nil
	})
	return out, err
}

// usedMemory is INFO memory used_memory less the clients' buffers
// (mem_clients_normal and mem_clients_slaves), summed over the nodes: the
// bytes Redis allocated for data and its own structures. A connection's
// query and reply buffers grow with a batch and shrink when it idles, and
// moved readings by 100-700 KB between phases of a run.
func (t *target) usedMemory(ctx context.Context) (int64, error) {
	used, _, err := t.memoryInfo(ctx)
	return used, err
}

// memoryInfo is usedMemory and INFO memory lazyfree_pending_objects,
// each summed over the nodes.
func (t *target) memoryInfo(ctx context.Context) (used, lazy int64, err error) {
	infos, err := t.infos(ctx, "memory")
	if err != nil {
		return 0, 0, err
	}
	for _, info := range infos {
		for line := range strings.Lines(info) {
			name, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch name {
			case "used_memory":
				used += n
			case "mem_clients_normal", "mem_clients_slaves":
				used -= n
			case "lazyfree_pending_objects":
				lazy += n
			}
		}
	}
	return used, lazy, nil
}

// settledMemory is usedMemory once Redis has finished freeing what was
// deleted before: UNLINK frees big values in the background and the key
// table shrinks in steps, so a baseline read at once would count memory
// about to be freed as the next measurement's. It waits, for at most
// settleLimit, until nothing awaits a lazy free and two readings
// settleGap apart differ by less than settleSlack.
func (t *target) settledMemory(ctx context.Context) (int64, error) {
	const (
		settleLimit = 5 * time.Second
		settleGap   = 100 * time.Millisecond
		settleSlack = 64 << 10
	)
	give := time.Now().Add(settleLimit)
	prev := int64(-1)
	for {
		used, lazy, err := t.memoryInfo(ctx)
		if err != nil {
			return 0, err
		}
		settled := lazy == 0 && prev >= 0 && used-prev < settleSlack && prev-used < settleSlack
		if settled || time.Now().After(give) {
			return used, nil
		}
		prev = used
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(settleGap):
		}
	}
}

// add adds the counters of one node's INFO to s.
func (s *sample) add(info string) {
	for line := range strings.Lines(info) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch {
		case name == "total_commands_processed":
			n, _ := strconv.ParseInt(value, 10, 64)
			s.commands += n
		case name == "used_cpu_user" || name == "used_cpu_sys":
			f, _ := strconv.ParseFloat(value, 64)
			s.cpu += f
		case strings.HasPrefix(name, "cmdstat_"):
			// cmdstat_hset:calls=12,usec=34,usec_per_call=2.83,...
			cmd := strings.TrimPrefix(name, "cmdstat_")
			for field := range strings.SplitSeq(value, ",") {
				k, v, _ := strings.Cut(field, "=")
				n, _ := strconv.ParseInt(v, 10, 64)
				switch k {
				case "calls":
					s.calls[cmd] += n
				case "usec":
					s.usec[cmd] += n
				}
			}
		}
	}
}

// redisCost is what one job cost Redis and the network, on average over
// a run.
type redisCost struct {
	// CommandsPerJob: Redis commands executed, those inside scripts
	// included.
	CommandsPerJob float64 `json:"commands_per_job"`
	// CPUMicrosPerJob: Redis server CPU time (user + system). On a single
	// Redis core, 1e6 / CPUMicrosPerJob bounds the jobs per second.
	CPUMicrosPerJob float64 `json:"redis_cpu_us_per_job"`
	// GoCPUMicrosPerJob: CPU time of the benchmark process (producers,
	// worker, and the Go runtime), the client side of the cost.
	GoCPUMicrosPerJob float64 `json:"go_cpu_us_per_job"`
	// Round trips per job made by the producers' client, by the worker's,
	// and both together.
	ProducerTripsPerJob float64 `json:"producer_round_trips_per_job"`
	WorkerTripsPerJob   float64 `json:"worker_round_trips_per_job"`
	TripsPerJob         float64 `json:"round_trips_per_job"`
	// WorkerTripsByScript breaks WorkerTripsPerJob down by Sluice script
	// ("step" is a step checkpoint, "other" any command not a script),
	// omitting those made less than once per 1000 jobs.
	WorkerTripsByScript map[string]float64 `json:"worker_round_trips_per_job_by_script"`
	// CallsPerJob breaks CommandsPerJob down by command (INFO
	// commandstats), omitting commands run less than once per 1000 jobs.
	CallsPerJob map[string]float64 `json:"calls_per_job"`
	// MicrosPerJob is the time Redis spent running each command (INFO
	// commandstats usec), omitting those under 0.01µs per job. A script's
	// time (evalsha) includes that of the commands it ran, which appear
	// under their own names as well.
	MicrosPerJob map[string]float64 `json:"usec_per_job"`
}

// costSince is the per-job cost of the jobs processed between from and to.
func costSince(from, to sample, jobs int) redisCost {
	n := float64(jobs)
	c := redisCost{
		CommandsPerJob:      float64(to.commands-from.commands) / n,
		CPUMicrosPerJob:     (to.cpu - from.cpu) * 1e6 / n,
		GoCPUMicrosPerJob:   float64(to.goCPU-from.goCPU) / float64(time.Microsecond) / n,
		ProducerTripsPerJob: float64(to.producerTrips-from.producerTrips) / n,
		WorkerTripsPerJob:   float64(to.workerTrips-from.workerTrips) / n,
		CallsPerJob:         map[string]float64{},
		MicrosPerJob:        map[string]float64{},
		WorkerTripsByScript: map[string]float64{},
	}
	for name, trips := range to.workerScripts {
		if per := float64(trips-from.workerScripts[name]) / n; per >= 0.001 {
			c.WorkerTripsByScript[name] = per
		}
	}
	c.TripsPerJob = c.ProducerTripsPerJob + c.WorkerTripsPerJob
	for cmd, calls := range to.calls {
		if per := float64(calls-from.calls[cmd]) / n; per >= 0.001 {
			c.CallsPerJob[cmd] = per
		}
	}
	for cmd, usec := range to.usec {
		if per := float64(usec-from.usec[cmd]) / n; per >= 0.01 {
			c.MicrosPerJob[cmd] = per
		}
	}
	return c
}

// cpuBound is the most jobs per second the machine could run at cost c,
// had the benchmark its CPUs to itself: Redis uses one core at most, and
// it shares them all with this process.
func (c redisCost) cpuBound() float64 {
	if c.CPUMicrosPerJob <= 0 || c.GoCPUMicrosPerJob <= 0 {
		return 0
	}
	return min(1e6/c.CPUMicrosPerJob, float64(goruntime.NumCPU())*1e6/(c.CPUMicrosPerJob+c.GoCPUMicrosPerJob))
}

// topCalls lists the k commands run most per job, most first, as
// "hset 4.00".
func (c redisCost) topCalls(k int) []string { return top(c.CallsPerJob, k) }

// top lists the k largest entries of m, largest first, as "name 4.00".
func top(m map[string]float64, k int) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := m[names[i]], m[names[j]]
		return a > b || a == b && names[i] < names[j]
	})
	out := make([]string, 0, k)
	for _, name := range names[:min(k, len(names))] {
		if m[name] >= 0.005 { // what would print as 0.00 is noise
			out = append(out, fmt.Sprintf("%s %.2f", name, m[name]))
		}
	}
	return out
}
