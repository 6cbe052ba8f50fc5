// Package harness is Sluice's benchmark: job throughput (enqueue and
// processing rates, and what each job costs Redis in commands, CPU and
// round trips), what rate classes and concurrency keys that never bind
// cost, enqueue-to-handler latency at a fixed rate, workflows of durable
// steps against the same workflow as chained jobs, a fan-out to many
// children joined by their parent, Redis memory per pending job, the time
// a workflow takes to resume after its worker was killed, and a soak of a
// million jobs that watches worker RSS and Redis memory. Two scenarios
// measure workflow waits: signal (step.WaitSignal woken by Client.Signal
// at -rate per second: Signal to handler resumed, and Redis's cost per
// signal) and sleep (-pending workflows in step.SleepUntil, 1,000 due per
// second: Redis memory per sleeping job, and how late each resumes; long,
// so only by name or with "all").
//
// It runs on a private redis-server (the default), a private 3-node Redis
// Cluster (-cluster), both one after the other (-topology single,cluster,
// which also prints the cluster/single throughput ratio), or any Redis or
// Redis Cluster given by URL (-redis). Every run uses a fresh namespace, so
// it never collides with other data on a shared Redis, and deletes its
// keys there afterwards.
//
// Main is the entry point of both the bench program and sluice bench:
//
//	go run ./bench                             # the default scenarios, table on stdout
//	go run ./bench -scenario latency           # one scenario
//	go run ./bench -scenario all               # every scenario, the soak too
//	go run ./bench -topology single,cluster    # both, and the cluster/single ratio
//	go run ./bench -redis redis+cluster://127.0.0.1:7001,127.0.0.1:7002
//	go run ./bench -json bench.json            # also write the figures as JSON
//	go run ./bench -json - 2>table.txt         # JSON on stdout, table on stderr
//	go run ./bench -cpuprofile cpu.out         # profile the benchmark process
//
// The crash-resume and soak scenarios run workers in child processes: the
// benchmark re-executes its own binary with the environment variable
// SLUICE_BENCH_CHILD set, which this package's init turns into a worker.
//
// The comparison with asynq (the separate module bench/peers) measures
// asynq with this package's instruments, so that both sides are measured
// alike: Countdown, SendPaced, Summarize and Distribution, SettleTime,
// WorkflowSteps, Sleep, the Redis helpers WarmPool, RedisVersion and
// DeleteKeys, and the output helpers Millis, Thousands and WriteJSON.
// bench/peers takes the run sizes from the same flags (Sizes.AddFlags) and
// passes them on to the bench program (Sizes.Args).
package harness
