package redisproc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id       string
	addr     string // ip:port, without the bus port
	master   bool
	failed   bool // flags "fail" or "fail?"
	masterID string
	slots    [][2]int
}

func (n clusterNode) serves(slot int) bool {
	for _, r := range n.slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// clusterNodes reads CLUSTER NODES from s.
func clusterNodes(ctx context.Context, s *Server) ([]clusterNode, error) {
	cl := s.Client()
	defer cl.Close()
	out, err := cl.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("node %s: CLUSTER NODES: %w", s.Addr(), err)
	}
	var nodes []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("node %s: CLUSTER NODES line %q", s.Addr(), line)
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := clusterNode{id: f[0], addr: addr, masterID: f[3]}
		for _, flag := range strings.Split(f[2], ",") {
			switch flag {
			case "master":
				n.master = true
			case "fail", "fail?":
				n.failed = true
			}
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") { // a slot being migrated or imported
				continue
			}
			lo, hi, isRange := strings.Cut(r, "-")
			if !isRange {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("node %s: CLUSTER NODES slot range %q", s.Addr(), r)
			}
			n.slots = append(n.slots, [2]int{a, b})
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// live returns the nodes whose process is running.
func (c *Cluster) live() []*Server {
	var out []*Server
	for _, s := range c.nodes {
		s.mu.Lock()
		if s.cmd != nil {
			out = append(out, s)
		}
		s.mu.Unlock()
	}
	return out
}

// byAddr finds a node of the cluster.
func (c *Cluster) byAddr(addr string) (*Server, error) {
	for _, s := range c.nodes {
		if s.Addr() == addr {
			return s, nil
		}
	}
	return nil, fmt.Errorf("redistest: no node %s in cluster %v", addr, c.Addrs())
}

// MasterOf returns the master that serves slot, as every running node sees
// it; it fails when they disagree (e.g. during a failover).
func (c *Cluster) MasterOf(ctx context.Context, slot int) (*Server, error) {
	var addr string
	for _, s := range c.live() {
		nodes, err := clusterNodes(ctx, s)
		if err != nil {
			return nil, err
		}
		seen := ""
		for _, n := range nodes {
			if n.master && !n.failed && n.serves(slot) {
				seen = n.addr
			}
		}
		if seen == "" || (addr != "" && seen != addr) {
			return nil, fmt.Errorf("redistest: nodes disagree on the master of slot %d: %q and %q (seen by %s)", slot, addr, seen, s.Addr())
		}
		addr = seen
	}
	return c.byAddr(addr)
}

// ReplicasOf returns the running replicas of master, as master sees them.
func (c *Cluster) ReplicasOf(ctx context.Context, master *Server) ([]*Server, error) {
	nodes, err := clusterNodes(ctx, master)
	if err != nil {
		return nil, err
	}
	var id string
	for _, n := range nodes {
		if n.addr == master.Addr() {
			id = n.id
		}
	}
	var out []*Server
	for _, n := range nodes {
		if n.masterID != id || n.failed {
			continue
		}
		s, err := c.byAddr(n.addr)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// replicaOfSlot returns the master of slot and its first running replica.
func (c *Cluster) replicaOfSlot(ctx context.Context, slot int) (master, replica *Server, err error) {
	if master, err = c.MasterOf(ctx, slot); err != nil {
		return nil, nil, err
	}
	reps, err := c.ReplicasOf(ctx, master)
	if err != nil {
		return nil, nil, err
	}
	if len(reps) == 0 {
		return nil, nil, fmt.Errorf("redistest: master %s of slot %d has no replica (StartCluster WithReplicas)", master.Addr(), slot)
	}
	return master, reps[0], nil
}

// Failover promotes a replica of slot's master with CLUSTER FAILOVER, the
// coordinated kind: the master stops taking writes until the replica has
// all of them, so nothing acknowledged is lost. It returns the new master
// once every running node agrees it serves slot.
func (c *Cluster) Failover(ctx context.Context, slot int) (*Server, error) {
	_, replica, err := c.replicaOfSlot(ctx, slot)
	if err != nil {
		return nil, err
	}
	cl := replica.Client()
	defer cl.Close()
	if err := cl.ClusterFailover(ctx).Err(); err != nil {
		return nil, fmt.Errorf("redistest: node %s: CLUSTER FAILOVER: %w", replica.Addr(), err)
	}
	return replica, c.awaitMaster(ctx, slot, replica)
}

// KillMaster SIGKILLs the master of slot and waits until its replica has
// taken over (after --cluster-node-timeout and an election) and every
// running node agrees. Replication is asynchronous: writes the dead master
// acknowledged but had not yet sent are lost unless the writer waited for
// them (WAIT). It returns the killed node (see Server.Restart) and the
// promoted one.
func (c *Cluster) KillMaster(ctx context.Context, slot int) (killed, promoted *Server, err error) {
	master, replica, err := c.replicaOfSlot(ctx, slot)
	if err != nil {
		return nil, nil, err
	}
	if err := master.Kill(); err != nil {
		return nil, nil, err
	}
	return master, replica, c.awaitMaster(ctx, slot, replica)
}

// MigrateSlot moves slot, keys and all, from its master to the master to,
// the way redis-cli --cluster reshard does: SETSLOT IMPORTING on to and
// MIGRATING on the source, MIGRATE of batch keys at a time with pause
// between batches, then SETSLOT NODE on every master. Meanwhile clients get
// ASK (keys already moved) or TRYAGAIN (a multi-key command whose keys are
// split), and MOVED afterwards.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, to *Server, batch int, pause time.Duration) error {
	src, err := c.MasterOf(ctx, slot)
	if err != nil {
		return err
	}
	if src == to {
		return fmt.Errorf("redistest: slot %d is already on %s", slot, to.Addr())
	}
	srcCl, dstCl := src.Client(), to.Client()
	defer srcCl.Close()
	defer dstCl.Close()
	srcID, err := srcCl.ClusterMyID(ctx).Result()
	if err != nil {
		return fmt.Errorf("redistest: node %s: CLUSTER MYID: %w", src.Addr(), err)
	}
	dstID, err := dstCl.ClusterMyID(ctx).Result()
	if err != nil {
		return fmt.Errorf("redistest: node %s: CLUSTER MYID: %w", to.Addr(), err)
	}
	steps := []struct {
		cl   *redis.Client
		args []any
	}{
		{dstCl, []any{"CLUSTER", "SETSLOT", slot, "IMPORTING", srcID}},
		{srcCl, []any{"CLUSTER", "SETSLOT", slot, "MIGRATING", dstID}},
	}
	for _, st := range steps {
		if err := st.cl.Do(ctx, st.args...).Err(); err != nil {
			return fmt.Errorf("redistest: %v: %w", st.args, err)
		}
	}
	for {
		ks, err := srcCl.ClusterGetKeysInSlot(ctx, slot, batch).Result()
		if err != nil {
			return fmt.Errorf("redistest: node %s: CLUSTER GETKEYSINSLOT %d: %w", src.Addr(), slot, err)
		}
		if len(ks) == 0 {
			break
		}
		args := []any{"MIGRATE", "127.0.0.1", to.Port(), "", 0, 5000, "KEYS"}
		for _, k := range ks {
			args = append(args, k)
		}
		if err := srcCl.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("redistest: node %s: MIGRATE %d keys of slot %d to %s: %w", src.Addr(), len(ks), slot, to.Addr(), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
	// The importing node first, so it owns the slot before the source
	// starts answering MOVED; then every other master. Replicas refuse
	// SETSLOT and learn the owner by gossip; a node recently demoted by a
	// failover may still look like a master and refuses too.
	nodes, err := clusterNodes(ctx, to)
	if err != nil {
		return err
	}
	owners := []*Server{to, src}
	for _, n := range nodes {
		if s, err := c.byAddr(n.addr); err == nil && n.master && !n.failed && s != to && s != src {
			owners = append(owners, s)
		}
	}
	for _, s := range owners {
		cl := s.Client()
		err := cl.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err()
		cl.Close()
		if err != nil && (s == to || s == src || !strings.Contains(err.Error(), "only with masters")) {
			return fmt.Errorf("redistest: node %s: CLUSTER SETSLOT %d NODE %s: %w", s.Addr(), slot, dstID, err)
		}
	}
	return c.awaitMaster(ctx, slot, to)
}

// AwaitReplicated waits until every running replica has received all its
// master had written when AwaitReplicated was called, so a master killed
// afterwards loses none of it. (WAIT would do for one connection's writes,
// but a ClusterClient spreads them over pooled connections.)
func (c *Cluster) AwaitReplicated(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, clusterReadyTimeout)
	defer cancel()
	want := map[string]int64{} // master address -> its offset now
	type replica struct {
		s      *Server
		master string
	}
	var reps []replica
	for _, s := range c.live() {
		fields, err := infoReplication(ctx, s)
		if err != nil {
			return err
		}
		if fields["role"] == "master" {
			off, _ := strconv.ParseInt(fields["master_repl_offset"], 10, 64)
			want[s.Addr()] = off
			continue
		}
		reps = append(reps, replica{s, fields["master_host"] + ":" + fields["master_port"]})
	}
	for _, r := range reps {
		for {
			fields, err := infoReplication(ctx, r.s)
			if err != nil {
				return err
			}
			off, _ := strconv.ParseInt(fields["slave_repl_offset"], 10, 64)
			if off >= want[r.master] {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("redistest: replica %s at offset %d, its master %s at %d: %w", r.s.Addr(), off, r.master, want[r.master], ctx.Err())
			case <-time.After(pollInterval):
			}
		}
	}
	return nil
}

func infoReplication(ctx context.Context, s *Server) (map[string]string, error) {
	cl := s.Client()
	defer cl.Close()
	info, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return nil, fmt.Errorf("redistest: node %s: INFO replication: %w", s.Addr(), err)
	}
	return parseInfo(info), nil
}

// awaitMaster waits until every running node reports cluster_state:ok and
// want as the master of slot.
func (c *Cluster) awaitMaster(ctx context.Context, slot int, want *Server) error {
	ctx, cancel := context.WithTimeout(ctx, clusterReadyTimeout)
	defer cancel()
	for {
		lastErr := c.agrees(ctx, slot, want)
		if lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: %s did not become the master of slot %d: %w", want.Addr(), slot, errors.Join(lastErr, ctx.Err()))
		case <-time.After(pollInterval * 5):
		}
	}
}

func (c *Cluster) agrees(ctx context.Context, slot int, want *Server) error {
	got, err := c.MasterOf(ctx, slot)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("slot %d is on %s", slot, got.Addr())
	}
	for _, s := range c.live() {
		cl := s.Client()
		info, err := cl.ClusterInfo(ctx).Result()
		cl.Close()
		if err != nil {
			return fmt.Errorf("node %s: CLUSTER INFO: %w", s.Addr(), err)
		}
		if st := parseInfo(info)["cluster_state"]; st != "ok" {
			return fmt.Errorf("node %s: cluster_state:%s", s.Addr(), st)
		}
	}
	return nil
}
