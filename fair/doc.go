// Package fair shares one limit among classes of traffic so that none of
// them can starve another: priority lanes with reserved shares of a rate
// (RateLanes) or of a concurrency limit (SlotLanes), a rate shared by any
// number of tenants in proportion to their weights (Share), and weighted
// fair queueing of the callers waiting for a concurrency limit (Queue).
//
// A single limiter is first come, first served: under contention, the
// client that asks fastest wins, and a flood of batch jobs, retries or
// one noisy tenant takes the capacity that interactive or paying traffic
// needed. Per-client limits fix who may send how much; the types here fix
// how one shared capacity is divided when it is scarce, without wasting
// what a class leaves unused.
//
//	lanes, err := fair.NewRateLanes(fair.RateLanesConfig{
//		Budget: admit.PerSecond(1000),
//		Lanes: []fair.Lane{
//			{Name: "critical", Share: 50},
//			{Name: "default", Share: 30},
//			{Name: "batch", Share: 20},
//		},
//		Borrowing: fair.BorrowAny,
//	})
//	...
//	d, err := lanes.Allow(ctx, admit.Request{Key: priorityOf(req), N: 1})
//
// # Which one should I use?
//
//   - RateLanes, when the shared limit is a rate (a backend's requests per
//     second, an API's budget) and traffic comes in a few classes of known
//     priority: each class is guaranteed its share, and may borrow what
//     the others leave unused. BorrowUp (the default) never lets a lower
//     class use a higher class's share; BorrowAny lets any class use any
//     idle capacity, and still gives a class back its share as soon as its
//     traffic comes back (within one period).
//   - Share, when the shared limit is a rate and its users are many and
//     not known in advance (tenants, API keys), each with a weight: when
//     they ask more than the rate, each active one gets at least its
//     weight's part of it (weights 1, 2 and 3 get 1/6, 2/6 and 3/6), and
//     what one leaves unused goes to the others at once. Its decisions are
//     exact, and redisstore's Store.Share makes the same ones for a fleet.
//   - SlotLanes, the same as RateLanes for a limit of requests in flight (workers,
//     connections). Borrowed slots come back when the requests holding
//     them end, so prefer BorrowUp, or a large reserve, when low-priority
//     requests are long.
//   - Queue, when callers can wait for a slot and come from many flows
//     (tenants, clients) that should share the capacity in proportion to
//     weights rather than to how much each one asks: a tenant that queues a
//     thousand requests waits behind its own, not in front of everyone.
//     It is a concurrency.Limiter's FIFO queue made fair.
//   - Per-key limits (package keyed, or concurrency with keys) when each
//     client should simply have a limit of its own; they compose with
//     these: a per-tenant rate in front of RateLanes shared by all.
//
// Every type is usable as a layer of a compose.Chain: RateLanes and Share
// are admit.KeyedLimiters and admit.Refunders whose key names the lane or
// the tenant;
// SlotLanes.Layer and Queue.Layer are admit.Slots whose key names the lane
// or the flow.
//
// Time is a parameter: the Allow and Refund of RateLanes and Share take
// the instant as the Request's At (without, they read the Clock of their
// Config); SlotLanes
// and Queue do not read the time at all, and Queue.Acquire waits only for slots or its context. Nothing here
// starts a goroutine or needs a Close.
package fair
