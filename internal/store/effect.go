package store

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/sluicetype"
)

// FollowUp is a job enqueued by an effect. An Effect carries it encoded
// (EncodeFollowUp), so the public Effect type names nothing internal.
type FollowUp struct {
	Partition keys.Partition
	Job       NewJob
	// Route is the key that placed it (flow's routing key: its partition
	// key, else its unique key, else its quarantine fingerprint; "" for
	// none), by which a relay places it again when a shrink retired
	// Partition (placeIndex): as every producer places a job with that
	// key, so that it meets one with its unique key there. An entry of
	// an older release has none.
	Route string `msgpack:",omitempty"`
}

// FollowUpEffect is the effect that enqueues f when its commit is written.
func FollowUpEffect(f FollowUp) (sluicetype.Effect, error) {
	b, err := msgpack.Marshal(&f)
	if err != nil {
		return sluicetype.Effect{}, fmt.Errorf("%w: follow-up job: %v", ErrInvalidEffect, err)
	}
	return sluicetype.Effect{Op: sluicetype.OpEnqueue, Job: b}, nil
}

// DecodeFollowUp reads the job of an ENQUEUE effect.
func DecodeFollowUp(e sluicetype.Effect) (FollowUp, error) {
	var f FollowUp
	if err := msgpack.Unmarshal(e.Job, &f); err != nil || f.Job.Kind == "" {
		return FollowUp{}, fmt.Errorf("%w: ENQUEUE without a readable job (build it with flow.FollowUp)", ErrInvalidEffect)
	}
	return f, nil
}

// ErrInvalidEffect: an effect is malformed (unknown op, no key, a key whose
// dedup marker cannot share its slot).
var ErrInvalidEffect = sluicetype.ErrInvalidEffect

// relayed is an outbox entry's effect, encoded with msgpack.
type relayed struct {
	From string    `msgpack:"f,omitempty"` // the ID in the partition of the job whose commit wrote it
	Mark string    `msgpack:"m"`
	Key  string    `msgpack:"k"`
	Op   string    `msgpack:"o"`
	Args []string  `msgpack:"a,omitempty"`
	Job  *FollowUp `msgpack:"j,omitempty"`
}

var directOps = map[string]bool{
	"INCRBY": true, "HINCRBY": true, "SET": true, "HSET": true, "SADD": true,
	"ZADD": true, "XADD": true, "RPUSH": true, "PEXPIRE": true,
}

// Bounds of an effect, the same in lua/lib_effects.lua.
const (
	// MaxEffectArgs bounds one effect's arguments.
	MaxEffectArgs = 100000
	// MaxXAddArgs bounds an XADD's arguments (ID, then field, value
	// pairs): one entry is written by one command, and Lua's unpack takes
	// about 8,000 values.
	MaxXAddArgs = 1001
	// MaxTTLMillis bounds a TTL (SET PX, PEXPIRE), far beyond any use and
	// far from the 64-bit overflow that Redis refuses.
	MaxTTLMillis = 1_000_000_000_000_000
)

// validateEffect checks what can be checked of a write without Redis, by
// the rules lua/lib_effects.lua applies again against the keys' contents:
// so a commit is refused before anything of it is written.
func validateEffect(e sluicetype.Effect) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s %s: %s", ErrInvalidEffect, e.Op, e.Key, fmt.Sprintf(format, a...))
	}
	n := len(e.Args)
	if n > MaxEffectArgs {
		return bad("%d arguments, more than %d", n, MaxEffectArgs)
	}
	switch e.Op {
	case "INCRBY":
		if n != 1 || !isInt64(e.Args[0]) {
			return bad("the increment is not a 64-bit integer")
		}
	case "HINCRBY":
		if n != 2 || !isInt64(e.Args[1]) {
			return bad("want a field and a 64-bit integer increment")
		}
	case "SET":
		if n != 1 && (n != 3 || e.Args[1] != "PX") {
			return bad("want a value and an optional PX ttl")
		}
		if n == 3 && !isTTL(e.Args[2]) {
			return bad("the TTL must be 1 to %d ms, got %q", int64(MaxTTLMillis), e.Args[2])
		}
	case "PEXPIRE":
		if n != 1 || !isTTL(e.Args[0]) {
			return bad("the TTL must be 1 to %d ms", int64(MaxTTLMillis))
		}
	case "HSET":
		if n < 2 || n%2 != 0 {
			return bad("want field, value pairs, got %d arguments", n)
		}
	case "ZADD":
		if n < 2 || n%2 != 0 {
			return bad("want score, member pairs, got %d arguments", n)
		}
		for i := 0; i < n; i += 2 {
			if !isScore(e.Args[i]) {
				return bad("score %q is not a number Redis takes", e.Args[i])
			}
		}
	case "XADD":
		if n < 3 || n%2 != 1 || e.Args[0] != "*" {
			return bad("want *, then field, value pairs")
		}
		if n > MaxXAddArgs {
			return bad("%d arguments, more than %d", n, MaxXAddArgs)
		}
	default: // SADD, RPUSH
		if n < 1 {
			return bad("no values")
		}
	}
	return nil
}

// isScore reports whether v is a sorted-set score Redis takes: the whole
// of it a number as C's strtod reads one (scoreSyntax), not NaN, neither
// overflowing (ParseFloat's range error) nor underflowing to 0 from a
// mantissa that is not 0, which Redis refuses too. lua/lib_effects.lua's
// score_ok takes the same.
func isScore(v string) bool {
	hex, ok := scoreSyntax(v)
	if !ok {
		return false
	}
	num := v
	if hex && !strings.ContainsAny(v, "pP") {
		num += "p0" // strtod's hex without an exponent; Go's wants one
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) {
		return false
	}
	if f == 0 { // an underflow unless its mantissa is all zeros
		mant, exp := strings.ToLower(strings.TrimLeft(v, "+-")), "e"
		if hex {
			mant, exp = mant[2:], "p" // 'e' is a digit there
		}
		mant, _, _ = strings.Cut(mant, exp)
		return strings.Trim(mant, "0.") == ""
	}
	return true
}

// scoreSyntax reports whether v is, whole, a number as C's strtod reads
// one, which is what Redis's ZADD takes (and Lua's tonumber, under the
// scripts): an optional sign, then "inf" or "infinity" (any case), or
// digits with an optional point and exponent ("1", "5.", ".5", "1e-3"),
// or "0x" and hex digits with an optional point and binary exponent
// ("0x10", "0x1.8", "0x1p-2"); no space, no digit separator ('_', which
// strconv.ParseFloat reads), no NaN. hex says whether it is hexadecimal.
func scoreSyntax(v string) (hex, ok bool) {
	s := strings.TrimPrefix(strings.TrimPrefix(v, "+"), "-")
	if len(s) < len(v)-1 {
		return false, false // two signs
	}
	switch strings.ToLower(s) {
	case "inf", "infinity":
		return false, true
	}
	digit, exp := isDigit, byte('e')
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s, hex, digit, exp = s[2:], true, isHexDigit, 'p'
	}
	i, n := 0, 0 // n: the mantissa's digits
	for ; i < len(s) && digit(s[i]); i++ {
		n++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && digit(s[i]); i++ {
			n++
		}
	}
	if n == 0 {
		return false, false
	}
	if i < len(s) && (s[i]|0x20) == exp {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for ; i < len(s) && isDigit(s[i]); i++ {
		}
		if i == start {
			return false, false
		}
	}
	return hex, i == len(s)
}

func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isHexDigit(c byte) bool { return isDigit(c) || 'a' <= c|0x20 && c|0x20 <= 'f' }

// isInt64 reports whether v is an integer as Redis reads one: canonical
// decimal (no '+', no leading zero) within 64 bits.
func isInt64(v string) bool {
	i, err := strconv.ParseInt(v, 10, 64)
	return err == nil && strconv.FormatInt(i, 10) == v
}

func isTTL(v string) bool {
	i, err := strconv.ParseInt(v, 10, 64)
	return err == nil && strconv.FormatInt(i, 10) == v && i > 0 && i <= MaxTTLMillis
}

// appendEffects adds effects to a script's ARGV as lua/lib_effects.lua's
// read_effects expects. commit names this commit uniquely (job, step and
// sequence) so relayed effects are applied once; local is the committing
// job's ID in p, which relayed effects carry to report a failure on it.
func (s *Store) appendEffects(args []any, p keys.Partition, local, commit string, fx []sluicetype.Effect) ([]any, error) {
	args = append(args, len(fx))
	if len(fx) == 0 {
		return args, nil
	}
	if commit == "" {
		return nil, fmt.Errorf("%w: effects of a commit without a name", ErrInvalidEffect)
	}
	slot := keys.Slot(p.Tag())
	for i, e := range fx {
		if e.Op == sluicetype.OpEnqueue {
			job, err := DecodeFollowUp(e)
			if err != nil {
				return nil, err
			}
			job.Job.Local = commit + ":" + strconv.Itoa(i)
			b, err := msgpack.Marshal(relayed{From: local, Op: sluicetype.OpEnqueue, Job: &job})
			if err != nil {
				return nil, err
			}
			args = append(args, "o", b)
			continue
		}
		if !directOps[e.Op] || e.Key == "" {
			return nil, fmt.Errorf("%w: %q on key %q", ErrInvalidEffect, e.Op, e.Key)
		}
		if err := validateEffect(e); err != nil {
			return nil, err
		}
		if keys.Reserved(s.cfg.NS, e.Key) {
			// a job's hash, an index, the registry, a relay's marker:
			// written by an effect, it would change what the scripts read
			return nil, fmt.Errorf("%w: %s %s: the key is one of Sluice's own", ErrInvalidEffect, e.Op, e.Key)
		}
		if keys.Slot(e.Key) == slot {
			args = append(args, "d", e.Op, e.Key, len(e.Args))
			for _, a := range e.Args {
				args = append(args, a)
			}
			continue
		}
		mark, ok := keys.EffectMark(s.cfg.NS, e.Key, commit+":"+strconv.Itoa(i))
		if !ok {
			return nil, fmt.Errorf("%w: key %q has a '}' but no valid hash tag", ErrInvalidEffect, e.Key)
		}
		b, err := msgpack.Marshal(relayed{From: local, Mark: mark, Key: e.Key, Op: e.Op, Args: e.Args})
		if err != nil {
			return nil, err
		}
		args = append(args, "o", b)
	}
	return args, nil
}
