package idempotency

import (
	"strconv"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// IncrBy adds n to the integer at key.
func IncrBy(key string, n int64) sluicetype.Effect {
	return sluicetype.Effect{Op: "INCRBY", Key: key, Args: []string{strconv.FormatInt(n, 10)}}
}

// HIncrBy adds n to the integer field of the hash at key.
func HIncrBy(key, field string, n int64) sluicetype.Effect {
	return sluicetype.Effect{Op: "HINCRBY", Key: key, Args: []string{field, strconv.FormatInt(n, 10)}}
}

// Set sets key to value, expiring after ttl (0: never), rounded up to a
// whole millisecond. A negative ttl is refused when the effect commits
// (ErrInvalidEffect), as Expire's is, rather than taken as "never".
func Set(key, value string, ttl time.Duration) sluicetype.Effect {
	args := []string{value}
	if ttl != 0 {
		args = append(args, "PX", millis(ttl))
	}
	return sluicetype.Effect{Op: "SET", Key: key, Args: args}
}

// HSet sets fields of the hash at key: field, value, field, value, ...
func HSet(key string, fieldValues ...string) sluicetype.Effect {
	return sluicetype.Effect{Op: "HSET", Key: key, Args: fieldValues}
}

// SAdd adds members to the set at key.
func SAdd(key string, members ...string) sluicetype.Effect {
	return sluicetype.Effect{Op: "SADD", Key: key, Args: members}
}

// ZAdd adds member with score to the sorted set at key.
func ZAdd(key string, score float64, member string) sluicetype.Effect {
	return sluicetype.Effect{Op: "ZADD", Key: key, Args: []string{strconv.FormatFloat(score, 'g', -1, 64), member}}
}

// XAdd appends an entry (field, value, ...) to the stream at key.
func XAdd(key string, fieldValues ...string) sluicetype.Effect {
	return sluicetype.Effect{Op: "XADD", Key: key, Args: append([]string{"*"}, fieldValues...)}
}

// RPush appends values to the list at key.
func RPush(key string, values ...string) sluicetype.Effect {
	return sluicetype.Effect{Op: "RPUSH", Key: key, Args: values}
}

// Expire sets key to expire after ttl, rounded up to a whole millisecond.
// A ttl of 0 or less is refused when the effect commits (it would delete
// the key at once).
func Expire(key string, ttl time.Duration) sluicetype.Effect {
	return sluicetype.Effect{Op: "PEXPIRE", Key: key, Args: []string{millis(ttl)}}
}

// millis is ttl in milliseconds, rounded up: Redis takes whole ones, and
// a TTL cut to 0 would mean another thing.
func millis(ttl time.Duration) string {
	ms := ttl.Milliseconds()
	if ttl > 0 && ttl%time.Millisecond != 0 {
		ms++
	}
	return strconv.FormatInt(ms, 10)
}
