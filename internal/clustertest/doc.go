// Package clustertest holds the end-to-end tests of Sluice on Redis
// Cluster: producers (flow.Client) and workers (runtime.Worker) on
// go-redis ClusterClients, partitioned queues spread over the shards, and
// the shards' topology changed under them (coordinated failover, slot
// migration, SIGKILLed master) with no job lost. It has no code of its
// own; the tests start their clusters with internal/redistest.
package clustertest
