package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/leases"
	"github.com/admit-go/admit/redisstore/internal/lua"
	"github.com/redis/go-redis/v9"
)

// Store is a connection to Redis shared by limiters: it owns the script,
// the pipeline that batches concurrent checks, and the deny cache. Create
// one per Redis deployment with New and its limiters with Store.Limiter.
// A Store is safe for concurrent use. Close stops its pipeline workers; it
// does not close the client.
type Store struct {
	client  redis.UniversalClient
	cluster bool // keys of different slots may not share a script call
	prefix  string
	script  *redis.Script
	o       storeOptions

	queue   chan *op
	quit    chan struct{}
	workers sync.WaitGroup
	closed  atomic.Bool
	once    sync.Once

	deny *denyCache
	// down is set when the latest pipeline got no answer from Redis at
	// all, and cleared by the next one that does (see Limiter.Healthy).
	down   atomic.Bool
	minTTL string    // decimal ms
	pool   sync.Pool // *op
	// tally counts the slots held through this process by the grants of
	// counted Slots (Slots.CountHeld); nil until one is made.
	tally atomic.Pointer[leases.Tally]
}

// New returns a Store on client: a *redis.Client (standalone, or Sentinel
// through redis.NewFailoverClient), a *redis.ClusterClient, or any other
// redis.UniversalClient. It does not contact Redis: an unreachable Redis is
// reported by the first check, and handled by the caller's failure policy
// (see package compose). The error wraps admit.ErrInvalidConfig: a nil
// client, or a field of cfg out of its domain.
func New(client redis.UniversalClient, cfg Config) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: redisstore: nil client", admit.ErrInvalidConfig)
	}
	o, err := cfg.options()
	if err != nil {
		return nil, err
	}
	s := &Store{
		client: client,
		prefix: o.prefix,
		script: redis.NewScript(lua.Decide),
		o:      o,
		queue:  make(chan *op, 4*o.maxBatch*o.pipelines),
		quit:   make(chan struct{}),
	}
	if _, ok := client.(*redis.Client); !ok {
		s.cluster = true
	}
	s.minTTL = strconv.FormatInt(int64((o.minTTL+time.Millisecond-1)/time.Millisecond), 10)
	if o.denyKeys > 0 {
		s.deny = newDenyCache(o.denyKeys)
	}
	s.pool.New = func() any { return &op{done: make(chan struct{}, 1)} }
	s.workers.Add(o.pipelines)
	for range o.pipelines {
		go s.work()
	}
	return s, nil
}

// Close stops the store's pipeline workers, failing the checks still
// queued with admit.ErrClosed. It does not close the client. Close is idempotent.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.closed.Store(true)
		close(s.quit)
		s.workers.Wait()
		for {
			select {
			case p := <-s.queue:
				p.err = errClosed
				p.done <- struct{}{}
			default:
				return
			}
		}
	})
	return nil
}

// item is one key's request within a script call.
type item struct {
	key   string     // the Redis key
	limit *lua.Limit // the script's arguments for the key's limit (see argsOf)
	n     int64
	delay int64 // the request's MaxDelay, ns (0: none)
}

// op is one script call a caller waits for: one key, or several layers
// decided all or nothing.
type op struct {
	items []item
	all   bool // all or nothing
	// mode is the script's mode for an op that is not all or nothing:
	// lua.Independent, lua.Refund (give the items' events back) or
	// lua.Partial (grant what fits of each item's n).
	mode string
	now  string // decimal ns, or "" for Redis TIME
	tag  uint64 // the hash tag's hash (the slot), for grouping in a cluster
	// deadline is the caller's (zero: none).
	deadline time.Time

	results []algo.Result
	granted []int64 // in lua.Partial mode, the events granted per item
	at      int64   // the instant the script decided at
	err     error
	done    chan struct{}
	single  [1]item
}

func (s *Store) getOp() *op {
	p := s.pool.Get().(*op)
	p.items = p.single[:0]
	p.results = p.results[:0]
	p.granted = p.granted[:0]
	p.err = nil
	p.all, p.mode = false, lua.Independent
	return p
}

func (s *Store) putOp(p *op) {
	for i := range p.items {
		p.items[i] = item{}
	}
	s.pool.Put(p)
}

// do queues p and waits for it. If ctx ends first, the caller gets its
// error and p is left to the worker (and not reused).
func (s *Store) do(ctx context.Context, p *op) error {
	if s.closed.Load() {
		return errClosed
	}
	p.deadline, _ = ctx.Deadline()
	select {
	case s.queue <- p:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.quit:
		return errClosed
	}
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.quit:
		// Close may have drained the queue before p went in: nobody
		// would answer it. (A worker that took p still answers, into
		// p.done's buffer, and p is not reused.)
		return errClosed
	}
}

// doBatch sends ops in one pipeline from the caller's goroutine, bounded by
// ctx and the store's timeout. Each op gets its results or error.
func (s *Store) doBatch(ctx context.Context, ops []*op) error {
	if s.closed.Load() {
		return errClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.timeout)
	defer cancel()
	s.run(ctx, ops)
	return nil
}

// work takes a batch of queued ops, sends them in one pipeline and hands
// out the results, until Close.
func (s *Store) work() {
	defer s.workers.Done()
	batch := make([]*op, 0, s.o.maxBatch)
	for {
		batch = batch[:0]
		select {
		case p := <-s.queue:
			batch = append(batch, p)
		case <-s.quit:
			return
		}
		if s.o.window > 0 {
			t := time.NewTimer(s.o.window)
		fill:
			for len(batch) < s.o.maxBatch {
				select {
				case p := <-s.queue:
					batch = append(batch, p)
				case <-t.C:
					break fill
				}
			}
			t.Stop()
		}
	drain:
		for len(batch) < s.o.maxBatch {
			select {
			case p := <-s.queue:
				batch = append(batch, p)
			default:
				break drain
			}
		}
		ctx, cancel := context.WithDeadline(context.Background(), s.deadline(batch))
		s.run(ctx, batch)
		cancel()
		for _, p := range batch {
			p.done <- struct{}{}
		}
	}
}

// deadline is when a pipeline for batch gives up: when its last caller has
// given up (so a store that does not answer holds a worker no longer than
// the callers wait), and at most the store's timeout from now.
func (s *Store) deadline(batch []*op) time.Time {
	limit := time.Now().Add(s.o.timeout)
	var last time.Time
	for _, p := range batch {
		if p.deadline.IsZero() {
			return limit
		}
		if p.deadline.After(last) {
			last = p.deadline
		}
	}
	if last.Before(limit) {
		return last
	}
	return limit
}

// call is one script call of a pipeline: ops merged when they decide keys
// independently (or give events back, or grant what fits) at the same
// instant (and, in a cluster, in one slot).
type call struct {
	all  bool    // one all-or-nothing op
	mode string  // the mode of its ops (see op.mode)
	now  string  // the instant of its ops
	ns   []int64 // in lua.Partial mode, the n of each key
	la   lua.Args
	ops  []*op
	keys []string
	args []any
	cmd  *redis.Cmd
}

// run sends batch as one pipeline of script calls, retrying with the
// script's source the calls that found it missing (NOSCRIPT), and stores
// each op's results or error.
func (s *Store) run(ctx context.Context, batch []*op) {
	calls := s.group(batch)
	for _, c := range calls {
		mode := c.mode
		if c.all {
			mode = lua.AllOrNothing
		}
		c.args = c.la.Append(make([]any, 0, 4+6+2*len(c.keys)), mode, c.now, s.minTTL)
	}
	start := time.Now()
	s.exec(ctx, calls, false)
	var missing []*call
	for _, c := range calls {
		if isNoScript(c.cmd.Err()) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		s.exec(ctx, missing, true)
	}
	elapsed := time.Since(start)
	var first error
	keys, answered := 0, false
	for _, c := range calls {
		err := s.deliver(c)
		if err != nil && first == nil {
			first = err
		}
		// An error reply (a key of the wrong type, a missing slot) comes
		// from a Redis that answers.
		var reply redis.Error
		if err == nil || errors.As(err, &reply) {
			answered = true
		}
		keys += len(c.keys)
	}
	s.down.Store(!answered)
	if s.o.obs != nil {
		s.o.obs.StoreCalled(admit.StoreEvent{Limiter: s.o.name, Op: "decide", Keys: keys, Duration: elapsed, Err: first})
	}
}

// exec sends calls in one pipeline, by EVALSHA or, with source, EVAL.
// Each command keeps its own error (a connection error fails them all),
// which deliver reads.
func (s *Store) exec(ctx context.Context, calls []*call, source bool) {
	_, _ = s.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, c := range calls {
			if source {
				c.cmd = s.script.Eval(ctx, pipe, c.keys, c.args...)
			} else {
				c.cmd = s.script.EvalSha(ctx, pipe, c.keys, c.args...)
			}
		}
		return nil
	})
}

// group merges the ops of a batch into script calls.
func (s *Store) group(batch []*op) []*call {
	calls := make([]*call, 0, 4)
	type group struct {
		now  string
		tag  uint64
		mode string
	}
	var merge map[group]*call
	if s.cluster {
		merge = make(map[group]*call, len(batch))
	}
	for _, p := range batch {
		if p.all {
			c := &call{ops: []*op{p}, now: p.now}
			s.appendOp(c, p)
			calls = append(calls, c)
			continue
		}
		var c *call
		if s.cluster {
			c = merge[group{p.now, p.tag, p.mode}]
		} else {
			// Few groups (one per instant given; usually just Redis's
			// clock): a linear search beats a map.
			for _, k := range calls {
				if !k.all && k.now == p.now && k.mode == p.mode && len(k.keys) < maxKeysPerCall {
					c = k
				}
			}
		}
		if c == nil || len(c.keys)+len(p.items) > maxKeysPerCall {
			c = &call{now: p.now, mode: p.mode}
			if s.cluster {
				merge[group{p.now, p.tag, p.mode}] = c
			}
			calls = append(calls, c)
		}
		c.ops = append(c.ops, p)
		s.appendOp(c, p)
	}
	return calls
}

// maxKeysPerCall bounds the keys of one script call (Lua's unpack and
// Redis's argument count stay small).
const maxKeysPerCall = 256

func (s *Store) appendOp(c *call, p *op) {
	c.all, c.mode = p.all, p.mode
	for _, it := range p.items {
		c.keys = append(c.keys, it.key)
		c.la.AddDelay(it.limit, it.n, it.delay)
		if p.mode == lua.Partial {
			c.ns = append(c.ns, it.n)
		}
	}
}

// deliver parses a call's reply into its ops and returns its error.
func (s *Store) deliver(c *call) error {
	err := c.cmd.Err()
	var now int64
	var res []algo.Result
	var granted []int64
	if err == nil {
		if c.mode == lua.Partial {
			now, res, granted, err = lua.ParsePartialReply(c.cmd.Val(), c.ns)
		} else {
			now, res, err = lua.ParseReply(c.cmd.Val(), len(c.keys))
		}
	}
	if err != nil {
		err = storeError(err)
	}
	i := 0
	for _, p := range c.ops {
		p.err = err
		if err == nil {
			p.results = append(p.results, res[i:i+len(p.items)]...)
			if granted != nil {
				p.granted = append(p.granted, granted[i:i+len(p.items)]...)
			}
			p.at = now
		}
		i += len(p.items)
	}
	return err
}

// checkInput refuses a negative cost (admit.ErrInvalidCost) and a key
// longer than the maximum (admit.ErrKeyTooLong), for every limiter of the Store.
func (s *Store) checkInput(key string, n int64) error {
	if n < 0 {
		return fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, n)
	}
	if len(key) > s.o.maxKeyLen {
		return fmt.Errorf("%w: redisstore: %d bytes, the maximum is %d", admit.ErrKeyTooLong, len(key), s.o.maxKeyLen)
	}
	return nil
}

func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// storeError wraps an error of Redis or of a reply in ErrStore, keeping the
// context's errors matchable.
func storeError(err error) error {
	if errors.Is(err, ErrStore) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrStore, err)
}
