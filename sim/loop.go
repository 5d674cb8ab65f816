package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/admit-go/admit"
)

// loop plays the run's events in order until the end.
func (r *run) loop(ctx context.Context) error {
	i := 0
	for ci := range r.clients {
		k := &r.clients[ci]
		n := max(k.c.Count, 1)
		for j := range n {
			if at := k.arr.first(r.arr, j, n); at >= 0 {
				r.ev.push(event{at: at, kind: evArrival, rep: int32(i)})
			}
			i++
		}
	}
	var attempts int64
	for len(r.ev.h) > 0 {
		e := r.ev.pop()
		if e.at >= r.end {
			break
		}
		r.advance(e.at)
		switch e.kind {
		case evArrival:
			r.arrive(int(e.rep), e.at)
		case evRetry:
			r.attempt(int(e.rep), int(e.attempt), int(e.slot), e.at)
		case evDone:
			r.done(e.slot, e.at)
		}
		if attempts++; attempts&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if r.acct.total.Attempts > maxAttempts {
				return fmt.Errorf("%w: more than %d attempts (retries included): shorten the run, or lower the rates or the retries", errTooBig, maxAttempts)
			}
			if len(r.ev.h) > maxPending {
				return fmt.Errorf("%w: more than %d requests pending at once (retries waiting, requests in the backend)", errTooBig, maxPending)
			}
		}
	}
	r.advance(r.end)
	if r.cfg.Progress != nil {
		r.cfg.Progress(time.Duration(r.end), time.Duration(r.end))
	}
	return nil
}

// advance moves the clock to t, closing the series' buckets passed.
func (r *run) advance(t int64) {
	for {
		boundary := (int64(r.acct.bucket) + 1) * r.step
		if t < boundary || r.acct.bucket >= r.nsteps {
			break
		}
		r.integrate(boundary)
		r.acct.closeBucket()
		if r.cfg.Progress != nil {
			r.cfg.Progress(time.Duration(min(boundary, r.end)), time.Duration(r.end))
		}
	}
	r.integrate(t)
	r.clk.set(t)
}

// integrate adds the backend's counts from the last instant to t.
func (r *run) integrate(t int64) {
	if r.back == nil {
		r.acct.last = t
		return
	}
	dt := t - r.acct.last
	if dt > 0 {
		r.back.integrate(dt)
		r.acct.last = t
	}
}

// arrive plays a client's new request at t, and schedules its next.
func (r *run) arrive(i int, t int64) {
	rp := &r.reps[i]
	k := &r.clients[rp.client]
	line := rp.n
	rp.n++
	if next := k.arr.next(r.arr, t, rp.n); next >= 0 {
		r.ev.push(event{at: next, kind: evArrival, rep: int32(i)})
	}
	if b := k.c.Retry.Budget; b > 0 {
		rp.tokens = min(rp.tokens+b, 10)
	}
	r.attempt(i, 1, line, t)
}

// attempt sends a client's request (attempt k of it) to an instance.
func (r *run) attempt(i, k, line int, t int64) {
	rp := &r.reps[i]
	c := &r.clients[rp.client]
	req, keys := &rp.req, rp.keys
	if rp.byKey != nil {
		rr := r.replayRequest(rp, c, line)
		req, keys = &rr.req, rr.keys
	}
	inst := r.instance()
	s := r.newSlot(i, t)
	out := &r.outs[inst]
	err := r.engines[inst].Check(r.ctx, req, &s.held, out)
	admitted := err == nil && out.Decision.Allowed
	r.acct.attempt(rp, c, k, admitted, err)
	r.acct.decided(rp, req, keys, out, admitted, k, t)
	if admitted {
		r.admit(s, t)
		return
	}
	s.held.Release()
	r.freeSlot(s)
	r.refused(i, k, line, t, out.Decision, err)
}

// instance picks the instance of the next request.
func (r *run) instance() int {
	n := len(r.engines)
	if n == 1 {
		return 0
	}
	if r.t.Balance == "random" {
		return r.bal.IntN(n)
	}
	r.balance = (r.balance + 1) % n
	return r.balance
}

// replayRequest returns the request of the key of a replayed line.
func (r *run) replayRequest(rp *replica, c *client, line int) *replayReq {
	key := c.arr.lines[line].key
	rr := rp.byKey[key]
	if rr == nil {
		rr = &replayReq{}
		rr.req, rr.keys = buildRequest(c.c, "0", key, c.hits)
		rp.byKey[key] = rr
	}
	return rr
}

// refused plays what a client does with a refusal: give up, or retry.
func (r *run) refused(i, k, line int, t int64, d admit.Decision, err error) {
	rp := &r.reps[i]
	c := &r.clients[rp.client]
	rt := &c.c.Retry
	var wait int64
	switch {
	case rt.On429 == "" || rt.On429 == "give_up" || k >= c.max:
		r.acct.gaveUp(rp, c)
		return
	case rt.On429 == "retry_after":
		if err != nil || d.RetryAfter >= admit.InfDuration {
			r.acct.gaveUp(rp, c)
			return
		}
		wait = int64(d.RetryAfter)
	}
	base := wait + int64(rt.Delay) // wait is 0 but for retry_after
	if rt.Jitter > 0 {
		base += int64(r.jit.Float64() * rt.Jitter * float64(base))
	}
	if rt.Budget > 0 {
		if rp.tokens < 1 {
			r.acct.gaveUp(rp, c)
			return
		}
		rp.tokens--
	}
	r.ev.push(event{at: t + base, kind: evRetry, rep: int32(i), attempt: uint16(k + 1), slot: int32(line)})
}

func (r *run) newSlot(rep int, t int64) *slot {
	var s *slot
	if n := len(r.free); n > 0 {
		s = r.slots[r.free[n-1]]
		r.free = r.free[:n-1]
	} else {
		s = &slot{id: int32(len(r.slots))}
		r.slots = append(r.slots, s)
	}
	s.rep, s.admitted = int32(rep), t
	return s
}

func (r *run) freeSlot(s *slot) { r.free = append(r.free, s.id) }

// admit hands an admitted request to the backend (or finishes it at once
// without one).
func (r *run) admit(s *slot, t int64) {
	if r.back == nil {
		r.finish(s, false)
		r.acct.succeeded(&r.reps[s.rep], &r.clients[r.reps[s.rep].client])
		return
	}
	b := r.back
	switch {
	case b.busy < b.workers:
		b.busy++
		r.ev.push(event{at: t + b.service(r.svc), kind: evDone, slot: s.id})
	case b.queue.len() < b.maxQueue:
		b.queue.push(s.id)
	default: // the queue is full: a 503, at once
		r.finish(s, true)
		r.acct.failed(&r.reps[s.rep], &r.clients[r.reps[s.rep].client])
	}
}

// done ends the service of the request in slot id at t, and starts the
// next waiting one (failing those whose wait passed the timeout).
func (r *run) done(id int32, t int64) {
	b := r.back
	s := r.slots[id]
	r.leave(s, t, false)
	b.busy--
	for b.queue.len() > 0 {
		next := r.slots[b.queue.pop()]
		if b.timeout > 0 && t-next.admitted > b.timeout {
			r.leave(next, t, true)
			continue
		}
		b.busy++
		r.ev.push(event{at: t + b.service(r.svc), kind: evDone, slot: next.id})
		break
	}
}

// leave records a request leaving the backend at t, served or failed.
func (r *run) leave(s *slot, t int64, failed bool) {
	b := r.back
	soj := t - s.admitted
	b.sojournSum += float64(soj)
	b.left++
	rp := &r.reps[s.rep]
	c := &r.clients[rp.client]
	if failed {
		r.acct.failed(rp, c)
	} else {
		b.latency.add(soj)
		r.acct.bucketLatency.add(soj)
		r.acct.succeeded(rp, c)
	}
	r.finish(s, failed)
}

// finish releases what the request held, reporting its outcome to the
// layers that learn from it.
func (r *run) finish(s *slot, failed bool) {
	if s.held.WantsOutcome() {
		s.held.Finish(failed)
	} else {
		s.held.Release()
	}
	r.freeSlot(s)
}
