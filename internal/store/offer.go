package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// offer is the part of an offer the worker writes (lua/lib_offer.lua):
// "<lease ms> <nonce> <channel> <m> [<kind> <ms>]... <worker>", or "" for
// none (Offer 0, or a space where the format takes none).
func (r *ClaimRequest) offer() string {
	if r.Offer <= 0 || r.OfferFor <= 0 || r.OfferChannel == "" || r.Worker == "" ||
		strings.Contains(r.OfferChannel, " ") || strings.Contains(r.Nonce, " ") || r.Nonce == "" {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s %s %d ", ms(r.Lease), r.Nonce, r.OfferChannel, len(r.KindLease))
	for k, d := range r.KindLease {
		if k == "" || strings.Contains(k, " ") {
			return ""
		}
		fmt.Fprintf(&b, "%s %d ", k, ms(d))
	}
	b.WriteString(r.Worker)
	return b.String()
}

// Push is a job an enqueue leased to a worker's offer and published on the
// worker's channel (lua/lib_offer.lua).
type Push struct {
	// WakeChannel and Partition name the partition it was enqueued in, as
	// its wake-ups do.
	WakeChannel string
	Partition   int
	// OfferMade is when the claim made the offer it was pushed under
	// (store time).
	OfferMade time.Time
	Jobs      []*Job
}

// DecodePush reads a message published on an offer's channel to worker:
// a line "<partition> <made> <wake channel>", then the jobs as a claim
// packs them. A job that does not decode comes as a claim's would,
// Malformed.
func DecodePush(payload, worker string) (Push, error) {
	head, packed, ok := strings.Cut(payload, "\n")
	if !ok {
		return Push{}, fmt.Errorf("%w: pushed job: no header line", ErrMalformed)
	}
	f := strings.SplitN(head, " ", 3)
	if len(f) != 3 {
		return Push{}, fmt.Errorf("%w: pushed job: header %q", ErrMalformed, head)
	}
	n, err1 := strconv.Atoi(f[0])
	made, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || n < 0 {
		return Push{}, fmt.Errorf("%w: pushed job: header %q", ErrMalformed, head)
	}
	jobs, err := decodeLeased(packed, nil, worker)
	return Push{WakeChannel: f[2], Partition: n, OfferMade: time.UnixMilli(made), Jobs: jobs}, err
}
