package store

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/redis/go-redis/v9"
)

// refreshSlots makes a cluster client reload its slot map after a script
// failed to reach its node. go-redis follows MOVED and ASK on its own, but
// when a master dies (its replica promoted) it keeps dialling the dead
// address until its periodic reload (ClusterOptions.ClusterStateReloadInterval,
// 60s by default). The reload is asynchronous and coalesced by go-redis.
func (s *Store) refreshSlots(err error) {
	if err == nil {
		return
	}
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		redis.HasErrorPrefix(err, "CLUSTERDOWN") {
		cc.ReloadState(context.Background())
	}
}
