package redisproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// sentinelConfFile is the name of a Sentinel's configuration file in its
// directory.
const sentinelConfFile = "sentinel.conf"

// sentinelTimeout bounds how long StartSentinel waits for the Sentinel to
// see the replica, and Failover for the replica to take over.
const sentinelTimeout = 20 * time.Second

// Sentinel is a master, one replica of it, and a Redis Sentinel watching
// them under a master name, started by StartSentinel: for tests of
// clients that find the master through Sentinel.
type Sentinel struct {
	Name     string  // the master name Sentinel knows them by
	Master   *Server // the master at start; the replica after Failover
	Replica  *Server
	Sentinel *Server
}

// StartSentinel starts a master, a replica of it and a Sentinel that
// monitors them as name (quorum 1), and waits until the replica is in
// sync and the Sentinel knows of it.
func StartSentinel(name string) (*Sentinel, error) {
	s := &Sentinel{Name: name}
	var err error
	// private servers, even with SLUICE_TEST_REDIS_ADDR set: the test
	// fails one of them over
	if s.Master, err = startServer(); err != nil {
		return nil, err
	}
	if s.Replica, err = startServer(WithArgs("--replicaof", "127.0.0.1", fmt.Sprint(s.Master.Port()))); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	conf := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds %[1]s 30000\n"+
		"sentinel failover-timeout %[1]s 5000\n", name, s.Master.Port())
	if s.Sentinel, err = startServer(func(c *config) { c.sentinel = conf }); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	ctx := context.Background()
	rdb, sdb := s.Replica.Client(), s.Sentinel.Client()
	defer rdb.Close()
	defer sdb.Close()
	if ok, last := Poll(sentinelTimeout, func() (bool, string) {
		info, err := rdb.Info(ctx, "replication").Result()
		if link := parseInfo(info)["master_link_status"]; err != nil || link != "up" {
			return false, fmt.Sprintf("replica link %q, %v", link, err)
		}
		// a replica SENTINEL FAILOVER can promote: flags "slave", no more
		replicas, err := sdb.Do(ctx, "SENTINEL", "REPLICAS", name).Slice()
		if err != nil || len(replicas) != 1 {
			return false, fmt.Sprintf("Sentinel knows %d replicas, %v", len(replicas), err)
		}
		flags := replicaFlags(replicas[0])
		return flags == "slave", fmt.Sprintf("replica flags %v", flags)
	}); !ok {
		err := fmt.Errorf("redistest: sentinel %s: the replica not in sync and known to Sentinel after %s: %s", name, sentinelTimeout, last)
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// replicaFlags is the flags field of one SENTINEL REPLICAS entry: a map
// (RESP3) or a flat list of fields and values (RESP2).
func replicaFlags(entry any) any {
	switch e := entry.(type) {
	case map[any]any:
		return e["flags"]
	case []any:
		for i := 0; i+1 < len(e); i += 2 {
			if e[i] == "flags" {
				return e[i+1]
			}
		}
	}
	return nil
}

// Addr is the Sentinel's address.
func (s *Sentinel) Addr() string { return s.Sentinel.Addr() }

// Failover has the Sentinel promote the replica (SENTINEL FAILOVER) and
// waits until the Sentinel names it as the master and it takes writes;
// Master and Replica then swap. Writes the old master took that had not
// reached the replica are lost, as in a real failover: a test that needs
// them kept makes a write of its own on the master and WAITs on the same
// connection first (WAIT waits for that connection's last write).
func (s *Sentinel) Failover(ctx context.Context) error {
	sdb, rdb := s.Sentinel.Client(), s.Replica.Client()
	defer sdb.Close()
	defer rdb.Close()
	if err := sdb.Do(ctx, "SENTINEL", "FAILOVER", s.Name).Err(); err != nil {
		return fmt.Errorf("redistest: SENTINEL FAILOVER %s: %w", s.Name, err)
	}
	want := s.Replica.Addr()
	if ok, last := Poll(sentinelTimeout, func() (bool, string) {
		addr, err := sdb.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.Name).StringSlice()
		if err != nil || len(addr) != 2 || net.JoinHostPort(addr[0], addr[1]) != want {
			return false, fmt.Sprintf("Sentinel names %v as master, %v", addr, err)
		}
		role, err := rdb.Do(ctx, "ROLE").Slice()
		return err == nil && len(role) > 0 && role[0] == "master", fmt.Sprintf("role %v, %v", role, err)
	}); !ok {
		return fmt.Errorf("redistest: sentinel %s: the replica not promoted after %s: %s", s.Name, sentinelTimeout, last)
	}
	s.Master, s.Replica = s.Replica, s.Master
	return nil
}

// Close stops the three servers and removes their directories.
func (s *Sentinel) Close() error {
	var errs []error
	for _, srv := range []*Server{s.Sentinel, s.Replica, s.Master} {
		if srv != nil {
			errs = append(errs, srv.Close())
		}
	}
	return errors.Join(errs...)
}
