// Command sluice is the operator's command line for Sluice: list and
// inspect jobs, cancel, delete, redrive and release them, pause and resume
// queues, read queue stats, list live workers and manage periodic
// schedules.
//
// Install it with
//
//	go install github.com/sluicehq/sluice/cmd/sluice@latest
//
// Usage:
//
//	sluice [global flags] <command> [flags] [arguments]
//
// Global flags (accepted before or after the command):
//
//	--redis URL         Redis URL (default $REDIS_URL, else redis://localhost:6379);
//	                    see flow.Connect: redis://, rediss:// (TLS), ACL
//	                    user:password, redis+cluster://host1:port,host2:port,
//	                    redis+sentinel://host1:port,host2:port?master_name=name
//	--namespace NS      Sluice namespace (default $SLUICE_NAMESPACE, else "sluice")
//	--partitions Q=N,.. partitions per queue; by default read from the live
//	                    workers' registry, else 1
//	--json              print JSON instead of tables
//
// Commands:
//
//	jobs list --queue Q --state S [--kind K] [--limit N] [--cursor C]
//	jobs show ID
//	jobs cancel ID [--retain D]                     kept D (default 24h; match the workers'
//	                                                runtime.Options.RetainCancelled)
//	jobs delete ID
//	redrive ID...                                   archived or cancelled jobs by ID (at most 1000)
//	redrive --queue Q [--state archived|cancelled|quarantined] [--kind K]
//	        [--reason R] [--after T] [--before T] [--batch N] [--dry-run]
//	release ID...                                   quarantined jobs by ID
//	queues pause Q | queues resume Q
//	queues stats [Q...] [--window 5m]
//	workers
//	schedules list | schedules pause NAME | schedules resume NAME | schedules trigger NAME
//
// Times (--after, --before) are RFC 3339 ("2026-03-01T12:00:00Z") or a
// duration ago ("2h"). A redrive by selector draws a progress bar on
// stderr.
//
// Exit codes: 0 success, 1 error (including a job in a state that refuses
// the command), 2 usage error, 3 not found (job or schedule). A redrive by
// ID exits 0 only when every job moved: 3 when the only failures are
// unknown IDs, else 1.
package main
