package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
)

// modelText is DataModel as the dm key holds it.
var modelText = strconv.Itoa(DataModel)

// models checks the data model of the partitions a read that is not a
// script (a pipeline, a MULTI) reads, as every script does first
// (lua/lib.lua model_error): the read queues a GET of each partition's
// dm key with its own commands, in the same round trip (and, in a MULTI,
// the same instant), and refuses what it read of a partition at a newer
// model (ErrNewerDataModel), whose keys this release would misread.
type models struct {
	at    map[keys.Partition]int
	parts []keys.Partition
	cmds  []*redis.StringCmd
}

// add queues the read of part's data model on p, once per partition.
func (m *models) add(ctx context.Context, p redis.Pipeliner, part keys.Partition) {
	if _, ok := m.at[part]; ok {
		return
	}
	if m.at == nil {
		m.at = map[keys.Partition]int{}
	}
	m.at[part] = len(m.cmds)
	m.parts = append(m.parts, part)
	m.cmds = append(m.cmds, p.Get(ctx, part.DataModel()))
}

// of is the error of part's data model as read, nil when this release
// knows it (absent is model 1): ErrNewerDataModel naming the partition
// and its model, ErrMalformed for a dm key of another type, or the error
// of reaching Redis.
func (m *models) of(part keys.Partition) error {
	i, ok := m.at[part]
	if !ok {
		return nil
	}
	v, err := m.cmds[i].Result()
	switch {
	case errors.Is(err, redis.Nil):
		return nil
	case err != nil && strings.Contains(err.Error(), "WRONGTYPE"):
		return fmt.Errorf("%w: %s%s is of another type than a model number (a partition at model 1 has no such key)",
			ErrMalformed, malformedKey, part.DataModel())
	case err != nil:
		return readError(err)
	case v == modelText:
		return nil
	}
	return fmt.Errorf("%w: the partition %s is at model %s, this release knows model %d only: upgrade this process",
		ErrNewerDataModel, part.Prefix(), v, DataModel)
}

// unreached is the first error of reaching Redis among the data-model
// reads (not a reply of Redis's, such as nil or WRONGTYPE): a pipeline's
// own error is only its first command's, so each command is looked at.
func (m *models) unreached() error {
	for _, c := range m.cmds {
		if err := c.Err(); err != nil && !isReplyError(err) {
			return err
		}
	}
	return nil
}

// err is the first error of the partitions' data models, in the order
// they were added.
func (m *models) err() error {
	for _, part := range m.parts {
		if err := m.of(part); err != nil {
			return err
		}
	}
	return nil
}

// readError types the error of a read that is not a script as
// scriptError does a script's: Redis's WRONGTYPE (a key holds another
// type than Sluice writes there) is ErrMalformed; other errors are
// returned as they are.
func readError(err error) error { return scriptError(err) }

// pipeError is the first error of a pipeline's commands other than
// redis.Nil (a key absent, for a GET or HGET: no error), typed by
// readError. A pipeline's own error is its first command's error,
// redis.Nil included, which would hide a later command's.
func pipeError(cmds []redis.Cmder) error {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return readError(err)
		}
	}
	return nil
}
