// Command sluice is the operator's command line for Sluice: list and
// inspect jobs, cancel, delete, redrive and release them, pause and resume
// queues, read queue stats, list live workers, manage periodic schedules
// and dead-lettered effects, serve the web console, and run the benchmark.
//
// Install it with
//
//	go install github.com/sluicehq/sluice/cmd/sluice@latest
//
// Usage:
//
//	sluice <command> [flags] [arguments]
//
// Every command has --help; flags go before or after the arguments.
// Global flags (accepted before or after the command):
//
//	--redis URL         Redis URL (default $REDIS_URL, else redis://localhost:6379);
//	                    see flow.Connect: redis://, rediss:// (TLS), ACL
//	                    user:password, redis+cluster://host1:port,host2:port,
//	                    redis+sentinel://host1:port,host2:port?master_name=name
//	--namespace NS      Sluice namespace (default $SLUICE_NAMESPACE, else "sluice")
//	--partitions Q=N,.. check that each queue Q exists with N partitions
//	                    (layouts are read from Redis, never assumed): a
//	                    queue not found exits 3, another count 1
//	--json              print JSON instead of tables
//
// Commands:
//
//	jobs list --state S [--queue Q] [--kind K] [--limit N] [--cursor C]
//	jobs show ID                                    with the newest panic's stack
//	jobs cancel ID [--retain D]                     kept D (default: as the queue's workers keep
//	                                                cancelled jobs, recorded in Redis; 24h with a
//	                                                note where none is)
//	jobs delete ID
//	jobs delete --queue Q --state S [--kind K] [--reason R] [--after T]
//	        [--before T] [--batch N] [--dry-run]    S: completed, archived, quarantined,
//	                                                cancelled, scheduled or retryable
//	jobs run-now ID...                              scheduled or retryable jobs, available now
//	jobs reroute ID --to WORKER [--after D | --fail-after D] | jobs reroute ID --unpin
//	jobs signal ID NAME [--data JSON] [--key K] | jobs signal ID NAME --discard   the next one kept
//	redrive ID...                                   archived or cancelled jobs by ID (at most 1000)
//	redrive --queue Q [--state archived|cancelled|quarantined] [--kind K]
//	        [--reason R] [--after T] [--before T] [--batch N] [--dry-run]
//	release ID... | release --queue Q [selector flags]   quarantined jobs
//	queues pause Q... | queues resume Q...
//	queues stats [Q...] [--window 5m] [--watch [--interval 2s]]
//	workers
//	schedules list | schedules pause NAME | schedules resume NAME | schedules trigger NAME |
//	schedules delete NAME [--force]
//	effects list --queue Q [--limit N] | effects redrive ID...
//	web [--addr 127.0.0.1:8080] [--prefix P] [--token T | --user U --password P]
//	    [--read-only] [--hide-args] [--insecure] [--secure-cookies] [--poll D]   the console (docs/web.md)
//	bench [benchmark flags]                         (sluice bench -h lists them)
//	completion bash|zsh|fish|powershell             shell completion script
//
// Times (--after, --before) are RFC 3339 ("2026-03-01T12:00:00Z") or a
// duration ago ("2h", by Redis's clock, which finish times are kept in,
// not this machine's). A redrive or delete by selector draws a progress
// bar on stderr when stderr is a terminal (never with --json); queues
// stats --watch redraws in place when stdout is a terminal; it and web
// stop on Ctrl-C or SIGTERM with exit 0.
//
// Exit codes: 0 success; 1 error, including a job whose state refuses
// the command (cancelling a finished job, redriving an available one);
// 2 usage (unknown command or flag, a value out of range, a malformed
// ID); 3 not found (a job, schedule, dead effect, queue or worker that
// does not exist, a completed job to reroute, which has no run left, or
// a namespace with no queues, also when a listing of workers or
// schedules finds none there). A queue exists once a client, worker or
// scheduler has used it: it is in the namespace's registry of queues
// (sluice queues list). A redrive by ID exits
// 0 only when every job moved, else with the exit code its errors share
// (3: all unknown IDs, 2: all malformed), or 1; so do jobs run-now,
// queues pause and resume, and effects redrive, which go on past a target
// that fails: --json then names the targets done and, under "failed",
// each that was not with its error. A redrive, release or delete by
// selector stopped part way (an error, Ctrl-C) says what its batches did
// (--json: the counts and "error") before its error; running it again
// goes on. Errors go to stderr, one "sluice: " line each, naming the job,
// queue or schedule; an empty listing says which queue and namespace it
// looked in.
//
// Adding a command: a constructor func (c *cli) xxxCmd() *cobra.Command
// in a file of its own, and its line in cli.tree (root.go).
package main
