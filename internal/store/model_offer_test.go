package store_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// The model's claims sometimes offer to take pushed jobs (lua/lib_offer.lua);
// its enqueues then predict from the idle flag, read just before, which
// plain jobs are leased by the enqueue itself. The checker's subscription
// to the offers' channel stands for the worker's; the messages are
// dropped, the model's leases come from the prediction.

// modelOfferFor is how long a model claim's offer holds.
const modelOfferFor = 10 * time.Minute

// subscribeOffers subscribes to the channel the model's claims offer on.
func (r *modelRun) subscribeOffers() {
	r.offerCh = keys.PushChannel(r.st.NS(), "model")
	ps := r.direct.Subscribe(r.ctx, r.offerCh)
	if _, err := ps.Receive(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	ch := ps.Channel()
	go func() {
		for range ch { // dropped
		}
	}()
	r.t.Cleanup(func() { ps.Close() })
}

// offer has a third of the claims offer 1 to 3 jobs, and every claim of
// opOffered.
func (r *modelRun) offer(req *store.ClaimRequest) {
	if r.offering || r.chance(1, 3) {
		req.Offer, req.OfferChannel, req.OfferFor = 1+r.pick(3), r.offerCh, modelOfferFor
	}
}

// opOffered is a claim that takes all it can and offers, then an enqueue:
// most other operations list or schedule a job, which ends the offer,
// and a claim of a few jobs seldom runs dry, so pushes would be rare
// between random operations.
func (r *modelRun) opOffered() {
	r.offering = true
	defer func() { r.offering = false }()
	r.opClaim()
	if len(r.m.jobs) < modelMaxJobs {
		r.opEnqueue() // mostly plain jobs
	}
}

// modelOffer is an offer an enqueue would push under now.
type modelOffer struct {
	k             int
	lease         int64 // ms
	nonce, worker string
}

// readOffer reads the partition's idle flag: the offer an enqueue run now
// pushes under, or nil.
func (r *modelRun) readOffer() *modelOffer {
	v, err := r.direct.Get(r.ctx, r.p.Idle()).Result()
	if errors.Is(err, redis.Nil) || v == "1" {
		return nil
	}
	if err != nil {
		r.fail("reading the idle flag: %v", err)
	}
	// until k made lease nonce channel m worker: the model's claims name
	// no kind leases
	f := strings.SplitN(v, " ", 8)
	if len(f) != 8 || f[5] != r.offerCh || f[6] != "0" {
		r.fail("idle flag %q holds no offer of the model's claims", v)
	}
	until, err1 := strconv.ParseInt(f[0], 10, 64)
	k, err2 := strconv.Atoi(f[1])
	lease, err3 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || k < 1 || lease != modelLease.Milliseconds() {
		r.fail("idle flag %q holds a malformed offer", v)
	}
	if until <= r.now() {
		return nil
	}
	return &modelOffer{k: k, lease: lease, nonce: f[4], worker: f[7]}
}

// take leases job j to offer o as the enqueue would, and says whether it
// did: not when o has no job left to give (nil once a job was listed
// before j in the call).
func (o *modelOffer) take(j *mjob, now int64) bool {
	if o == nil || o.k < 1 {
		return false
	}
	// a pushed job is plain, its payload in its hash: its lease ID carries
	// the mark, after its worker and start
	lease := fmt.Sprintf("%s/%d/%s.p%d=", o.worker, now, o.nonce, o.k)
	j.state, j.lease, j.fence, j.score, j.worker, j.started = "running", lease, 1, now+o.lease, o.worker, now
	o.k--
	return true
}
