package store

import (
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestContentIDIsFNV: a call's content ID is 128-bit FNV-1a over each
// part and a zero byte after it, whichever way a part is added, so a batch
// sent again is the same call and any other batch another.
func TestContentIDIsFNV(t *testing.T) {
	parts := [][]string{
		{},
		{""},
		{"j1", "lease.1", "7", "ok", ""},
		{"j1", "lease.1", "-12", "retry", "boom", "\x00\xff"},
		{strings.Repeat("\xff", 300)}, // carries through both words
	}
	for _, ps := range parts {
		want := fnv.New128a()
		for _, p := range ps {
			want.Write([]byte(p))
			want.Write([]byte{0})
		}
		sum := want.Sum(nil)
		// the same parts added as strings, as bytes, and (where a part is
		// a number) as an integer
		asString, asBytes, mixed := newContentID(), newContentID(), newContentID()
		for _, p := range ps {
			asString.add(p)
			asBytes.addBytes([]byte(p))
			if n, err := strconv.ParseInt(p, 10, 64); err == nil {
				mixed.addInt(n)
			} else {
				mixed.add(p)
			}
		}
		for name, got := range map[string]contentID{"add": asString, "addBytes": asBytes, "addInt": mixed} {
			if got.hi != binary.BigEndian.Uint64(sum[:8]) || got.lo != binary.BigEndian.Uint64(sum[8:]) {
				t.Errorf("%q by %s: %x %x, want FNV-1a %x", ps, name, got.hi, got.lo, sum)
			}
		}
		if c := asString.call(); c != "c"+base64.RawURLEncoding.EncodeToString(sum) {
			t.Errorf("%q: call ID %q", ps, c)
		}
	}
	a, b := newContentID(), newContentID()
	a.add("ab")
	a.add("c")
	b.add("a")
	b.add("bc")
	if a == b {
		t.Error("parts split differently hash alike: the zero byte between them is missing")
	}
}

// TestCallIDsAre128Bits: a new call's ID is 128 random bits after its
// prefix, in a text with no '~' (which ends the ID's own part,
// lua/lib_replay.lua), and content IDs and random ones never share a text.
func TestCallIDsAre128Bits(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newCallID()
		raw, err := base64.RawURLEncoding.DecodeString(id[1:])
		switch {
		case id[0] != 'n' || err != nil || len(raw) != 16:
			t.Fatalf("call ID %q: want 'n' and 16 bytes in base64url (%v)", id, err)
		case strings.Contains(id, "~"):
			t.Fatalf("call ID %q holds '~'", id)
		case seen[id]:
			t.Fatalf("call ID %q made twice", id)
		}
		seen[id] = true
	}
	if c := newContentID().call(); c[0] != 'c' || len(c) != len(newCallID()) {
		t.Errorf("content ID %q: want 'c' and as long as a random one", c)
	}
}

// TestCallKeepCoversTheClientsResends: a call's record is kept for as long
// as its client may re-send the call, read from the client's options, and
// never less than CallKeep. With go-redis's defaults a re-send can come
// over two minutes after Redis ran the call (three retries, each of which
// may wait for a connection and dial five times); a record of 60 s let
// such a re-send run again, and an enqueue with a generated ID added a
// copy.
func TestCallKeepCoversTheClientsResends(t *testing.T) {
	cases := []struct {
		name     string
		rdb      redis.UniversalClient
		min, max time.Duration
	}{
		{"defaults", redis.NewClient(&redis.Options{}), 130 * time.Second, 170 * time.Second},
		{"cluster defaults", redis.NewClusterClient(&redis.ClusterOptions{}), 130 * time.Second, 170 * time.Second},
		{"no retries", redis.NewClient(&redis.Options{MaxRetries: -1}), CallKeep, CallKeep},
		{"long timeouts", redis.NewClient(&redis.Options{ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}), 4 * time.Minute, maxCallKeep},
		{"no read timeout", redis.NewClient(&redis.Options{ReadTimeout: -1}), maxCallKeep, maxCallKeep},
	}
	for _, c := range cases {
		if got := callKeep(c.rdb); got < c.min || got > c.max {
			t.Errorf("%s: %s, want %s..%s", c.name, got, c.min, c.max)
		}
		_ = c.rdb.Close()
	}
}

// TestCallKeepClusterNodeRetries: a cluster client whose options set
// MaxRetries retries a command on each node client (the node clients take
// ClusterOptions.MaxRetries) inside each of the cluster client's own
// MaxRedirects attempts: up to (MaxRedirects+1)*(MaxRetries+1)
// deliveries, not max(MaxRedirects, MaxRetries)+1. Its record must last
// as long as that client may re-send, as a single client's does for its
// retries.
func TestCallKeepClusterNodeRetries(t *testing.T) {
	cl := redis.NewClusterClient(&redis.ClusterOptions{MaxRedirects: 3, MaxRetries: 3})
	defer cl.Close()
	// the same bound for a single client making as many re-sends
	single := redis.NewClient(&redis.Options{MaxRetries: (3+1)*(3+1) - 1})
	defer single.Close()
	if got, want := callKeep(cl), callKeep(single); got < want {
		t.Errorf("cluster MaxRedirects 3, MaxRetries 3: record kept %s; the client may re-send for %s (15 re-sends)", got, want)
	}
}
