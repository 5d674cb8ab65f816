package grpclimit

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/admit-go/admit"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Client retries the calls a server refused with codes.ResourceExhausted
// and a google.rpc.RetryInfo (as a Server does), after the delay the
// RetryInfo asks for, through the interceptors it returns
// (UnaryClientInterceptor, StreamClientInterceptor). It never retries
// another code, nor a ResourceExhausted without RetryInfo (a limit that
// cannot be waited out, such as a call that can never be admitted).
//
// A call is tried at most MaxRetries+1 times (ClientConfig). A refusal is
// returned at once, without waiting, when its delay is longer than MaxWait or
// would reach the call's deadline; a wait ends early, with the context's
// status (codes.Canceled or codes.DeadlineExceeded), when the call's
// context ends. Waits read the Client's Clock (ClientConfig.Clock), so tests drive
// them without sleeping.
//
// A stream is retried only while nothing of it has reached the caller: no
// response message or header has been received, and the messages sent so
// far fit in ClientConfig.StreamBuffer; they are sent again, in order, on the new
// stream, and CloseSend is repeated if it was called. A SendMsg that finds
// the refused stream closed keeps its message for the retry and returns
// nil; if the stream is then not retried, RecvMsg returns the refusal (as
// gRPC's SendMsg does, a nil error never promised delivery).
//
// The zero Client is not usable; create one with NewClient. A Client is
// safe for concurrent use.
type Client struct {
	retries int
	maxWait time.Duration
	clock   admit.Clock
	buffer  int
}

// NewClient returns a Client configured by cfg (the zero ClientConfig
// gives the defaults). It fails with an error wrapping
// admit.ErrInvalidConfig, naming the field, for a field of cfg out of its
// domain.
func NewClient(cfg ClientConfig) (*Client, error) {
	c := &Client{retries: cfg.MaxRetries, maxWait: cfg.MaxWait, clock: cfg.Clock, buffer: cfg.StreamBuffer}
	switch {
	case c.retries == 0:
		c.retries = defaultMaxRetries
	case c.retries < 0:
		c.retries = 0
	}
	switch {
	case c.maxWait < 0:
		return nil, invalid("MaxWait %v: want >= 0", c.maxWait)
	case c.maxWait == 0:
		c.maxWait = defaultMaxWait
	}
	if c.clock == nil {
		c.clock = admit.SystemClock
	}
	switch {
	case c.buffer == 0:
		c.buffer = defaultStreamBuffer
	case c.buffer < 0:
		c.buffer = 0
	}
	return c, nil
}

// RetryDelay returns the delay err's RetryInfo asks for, and true, if err
// is a codes.ResourceExhausted status with a valid, non-negative RetryInfo.
func RetryDelay(err error) (time.Duration, bool) {
	if err == nil {
		return 0, false
	}
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted {
		return 0, false
	}
	for _, d := range st.Details() {
		ri, ok := d.(*errdetails.RetryInfo)
		if !ok || ri.GetRetryDelay() == nil {
			continue
		}
		if ri.GetRetryDelay().CheckValid() != nil {
			return 0, false
		}
		delay := ri.GetRetryDelay().AsDuration()
		if delay < 0 {
			return 0, false
		}
		return delay, true
	}
	return 0, false
}

// delay returns how long to wait before retrying a call that failed with
// err, and false if it must not be retried.
func (c *Client) delay(ctx context.Context, err error) (time.Duration, bool) {
	d, ok := RetryDelay(err)
	if !ok || d > c.maxWait {
		return 0, false
	}
	if dl, ok := ctx.Deadline(); ok && !c.clock.Now().Add(d).Before(dl) {
		return 0, false
	}
	return d, true
}

// wait waits d on the Client's clock, or until ctx ends, when it returns
// the context's status.
func (c *Client) wait(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	if d <= 0 {
		return nil
	}
	t := c.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// UnaryClientInterceptor returns the interceptor retrying refused unary
// calls.
func (c *Client) UnaryClientInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		for attempt := 0; err != nil && attempt < c.retries; attempt++ {
			d, ok := c.delay(ctx, err)
			if !ok {
				return err
			}
			if werr := c.wait(ctx, d); werr != nil {
				return werr
			}
			err = invoker(ctx, method, req, reply, cc, opts...)
		}
		return err
	}
}

// StreamClientInterceptor returns the interceptor retrying refused streams
// (see Client).
func (c *Client) StreamClientInterceptor() grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		attempts := 0
		for ; err != nil && attempts < c.retries; attempts++ {
			d, ok := c.delay(ctx, err)
			if !ok {
				return nil, err
			}
			if werr := c.wait(ctx, d); werr != nil {
				return nil, werr
			}
			cs, err = streamer(ctx, desc, cc, method, opts...)
		}
		if err != nil {
			return nil, err
		}
		if c.retries == attempts {
			return cs, nil
		}
		return &retryStream{c: c, ctx: ctx, desc: desc, cc: cc, method: method, streamer: streamer, opts: opts, cs: cs, attempts: attempts}, nil
	}
}

// retryStream is a client stream that is replaced by a new one when the
// server refuses it with RetryInfo before anything reached the caller.
type retryStream struct {
	c        *Client
	ctx      context.Context
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	method   string
	streamer grpc.Streamer
	opts     []grpc.CallOption

	mu        sync.Mutex
	cs        grpc.ClientStream
	gen       int // incremented when cs is replaced
	attempts  int
	sent      []any // messages sent while not committed
	closed    bool  // CloseSend was called
	ended     bool  // the current stream refused a message (io.EOF)
	retrying  bool  // RecvMsg is waiting to retry
	committed bool  // no more retries: something reached the caller
}

var _ grpc.ClientStream = (*retryStream)(nil)

func (s *retryStream) current() grpc.ClientStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cs
}

// commit gives up retrying; s.mu is held.
func (s *retryStream) commit() {
	s.committed = true
	s.sent = nil
}

func (s *retryStream) Header() (metadata.MD, error) {
	md, err := s.current().Header()
	if md != nil && err == nil {
		s.mu.Lock()
		s.commit()
		s.mu.Unlock()
	}
	return md, err
}

func (s *retryStream) Trailer() metadata.MD { return s.current().Trailer() }

func (s *retryStream) Context() context.Context { return s.current().Context() }

func (s *retryStream) CloseSend() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.ended || s.retrying {
		return nil
	}
	return s.cs.CloseSend()
}

func (s *retryStream) SendMsg(m any) error {
	// The lock is not held while sending: a send blocked by flow control
	// must not keep RecvMsg from reading.
	s.mu.Lock()
	cs, gen := s.cs, s.gen
	switch {
	case s.committed:
		s.mu.Unlock()
		return cs.SendMsg(m)
	case len(s.sent) >= s.c.buffer:
		// Too much to replay: this stream will not be retried.
		s.commit()
		dead := s.ended || s.retrying
		s.mu.Unlock()
		if dead {
			return io.EOF
		}
		return cs.SendMsg(m)
	}
	s.sent = append(s.sent, m)
	dead := s.ended || s.retrying
	s.mu.Unlock()
	if dead {
		return nil
	}
	err := cs.SendMsg(m)
	if errors.Is(err, io.EOF) {
		// The server ended the stream; RecvMsg learns why, and retries
		// with this message if it was a refusal.
		s.mu.Lock()
		switch {
		case s.gen != gen:
			err = nil // the new stream was sent m when it was opened
		case !s.committed:
			s.ended = true
			err = nil
		}
		s.mu.Unlock()
	}
	return err
}

func (s *retryStream) RecvMsg(m any) error {
	for {
		cs := s.current()
		err := cs.RecvMsg(m)
		s.mu.Lock()
		if err == nil || errors.Is(err, io.EOF) || s.committed || s.attempts >= s.c.retries {
			s.commit()
			s.mu.Unlock()
			return err
		}
		d, ok := s.c.delay(s.ctx, err)
		if !ok {
			s.commit()
			s.mu.Unlock()
			return err
		}
		s.retrying = true
		s.attempts++
		s.mu.Unlock()

		if werr := s.c.wait(s.ctx, d); werr != nil {
			s.mu.Lock()
			s.retrying = false
			s.commit()
			s.mu.Unlock()
			return werr
		}
		if rerr := s.restart(); rerr != nil {
			return rerr
		}
		if s.isCommitted() {
			return err
		}
	}
}

func (s *retryStream) isCommitted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

// restart opens a new stream and sends it what the refused one was sent.
// It returns an error only if the new stream cannot be opened; a stream
// that can no longer be retried (its buffer overflowed meanwhile) is left
// committed, and the caller returns the refusal.
func (s *retryStream) restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retrying = false
	if s.committed {
		return nil
	}
	cs, err := s.streamer(s.ctx, s.desc, s.cc, s.method, s.opts...)
	if err != nil {
		s.commit()
		return err
	}
	s.cs, s.ended = cs, false
	s.gen++
	for _, m := range s.sent {
		if err := cs.SendMsg(m); err != nil {
			if errors.Is(err, io.EOF) {
				s.ended = true
				return nil
			}
			s.commit()
			return err
		}
	}
	if s.closed {
		return cs.CloseSend()
	}
	return nil
}
