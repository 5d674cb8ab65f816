package grpclimit

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// details returns the RetryInfo and QuotaFailure of err's status.
func details(t *testing.T, err error) (*status.Status, *errdetails.RetryInfo, *errdetails.QuotaFailure) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("not a status: %v", err)
	}
	var (
		ri *errdetails.RetryInfo
		qf *errdetails.QuotaFailure
	)
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			ri = d
		case *errdetails.QuotaFailure:
			qf = d
		default:
			t.Errorf("unexpected detail %T: %v", d, d)
		}
	}
	return st, ri, qf
}

func TestRefusalUnary(t *testing.T) {
	for _, tc := range []struct {
		name       string
		limit      admit.Limit
		delay      time.Duration // RetryInfo
		retryAfter string
		policy     string
		desc       string
	}{
		{"whole seconds", admit.PerSecond(1), time.Second, "1", `"api";q=1;w=1`, "1/s"},
		{"1.5s", admit.Limit{Rate: 2, Period: 3 * time.Second, Burst: 1}, 1500 * time.Millisecond, "2", `"api";q=1;w=2`, "2/3s burst 1"},
		// T = 1/3 s: RetryAfter is 333333334ns, rounded up to 334ms.
		{"fraction of a ms", admit.Limit{Rate: 3, Period: time.Second, Burst: 1}, 334 * time.Millisecond, "1", `"api";q=1;w=1`, "3/s burst 1"},
		{"burst 5 per minute", admit.PerMinute(5), 12 * time.Second, "12", `"api";q=5;w=60`, "5/min"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := admittest.NewManualClock(admittest.Epoch)
			lim := newKeyed(t, tc.limit, clk, "api")
			s, err := NewServer(lim, MetadataKey("X-API-Key"), Config{})
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, s, nil)
			for range tc.limit.Burst {
				if _, err := e.client.EmptyCall(withKey("alice"), &testpb.Empty{}); err != nil {
					t.Fatalf("admitted call: %v", err)
				}
			}
			var trailer metadata.MD
			_, err = e.client.EmptyCall(withKey("alice"), &testpb.Empty{}, grpc.Trailer(&trailer))
			st, ri, qf := details(t, err)
			if st.Code() != codes.ResourceExhausted {
				t.Fatalf("code %v, want ResourceExhausted (%v)", st.Code(), err)
			}
			if ri == nil || ri.GetRetryDelay().AsDuration() != tc.delay {
				t.Errorf("RetryInfo %v, want %v", ri, tc.delay)
			}
			if qf == nil || len(qf.GetViolations()) != 1 {
				t.Fatalf("QuotaFailure %v", qf)
			}
			v := qf.GetViolations()[0]
			if v.GetSubject() != "api" || v.GetDescription() != tc.desc || v.GetQuotaValue() != tc.limit.Burst {
				t.Errorf("violation %v, want subject api, description %q", v, tc.desc)
			}
			if !strings.Contains(st.Message(), `"api"`) || !strings.Contains(st.Message(), tc.desc) {
				t.Errorf("message %q names neither the limit nor its figures", st.Message())
			}
			want := map[string]string{
				"retry-after":      tc.retryAfter,
				"ratelimit":        `"api";r=0;t=` + tc.retryAfter,
				"ratelimit-policy": tc.policy,
			}
			for k, v := range want {
				if got := trailer.Get(k); len(got) != 1 || got[0] != v {
					t.Errorf("trailer %s = %q, want %q", k, got, v)
				}
			}
			// Another key has its own limit; the refused one nothing.
			if _, err := e.client.EmptyCall(withKey("bob"), &testpb.Empty{}); err != nil {
				t.Errorf("another key: %v", err)
			}
			if got := e.svc.calls.Load(); got != tc.limit.Burst+1 {
				t.Errorf("handler ran %d times, want %d", got, tc.limit.Burst+1)
			}
			clk.Advance(tc.delay)
			if _, err := e.client.EmptyCall(withKey("alice"), &testpb.Empty{}); err != nil {
				t.Errorf("after RetryInfo's delay: %v", err)
			}
		})
	}
}

func TestRefusalWithoutRetryInfo(t *testing.T) {
	// A call of more than the burst can never be admitted: no RetryInfo,
	// so clients do not retry.
	lim := &scripted{results: []result{{d: admit.Decision{Limit: admit.PerSecond(5), RetryAfter: admit.InfDuration, Rule: "big"}}}}
	s, err := NewServer(lim, MetadataKey("x-api-key"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, s, nil)
	var trailer metadata.MD
	_, err = e.client.EmptyCall(withKey("a"), &testpb.Empty{}, grpc.Trailer(&trailer))
	st, ri, qf := details(t, err)
	if st.Code() != codes.ResourceExhausted || ri != nil || qf == nil {
		t.Fatalf("status %v, RetryInfo %v, QuotaFailure %v", st, ri, qf)
	}
	if !strings.Contains(st.Message(), "never") {
		t.Errorf("message %q", st.Message())
	}
	if trailer.Get("retry-after") != nil {
		t.Errorf("retry-after sent without RetryInfo: %v", trailer)
	}
	if got := trailer.Get("ratelimit"); len(got) != 1 || got[0] != `"big";r=0` {
		t.Errorf("ratelimit %q", got)
	}
}

func TestExempt(t *testing.T) {
	deny := func() admit.KeyedLimiter {
		return newKeyed(t, admit.Limit{}, admit.SystemClock, "none")
	}
	t.Run("health by default", func(t *testing.T) {
		s, err := NewServer(deny(), MetadataKey("x-api-key"), Config{})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, s, nil)
		if _, err := e.health.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
			t.Errorf("health: %v", err)
		}
		if _, err := e.client.EmptyCall(context.Background(), &testpb.Empty{}); status.Code(err) != codes.ResourceExhausted {
			t.Errorf("EmptyCall: %v", err)
		}
	})
	t.Run("without default", func(t *testing.T) {
		s, err := NewServer(deny(), MetadataKey("x-api-key"), Config{LimitHealth: true, Exempt: []string{mUnary}})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, s, nil)
		if _, err := e.health.Check(context.Background(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.ResourceExhausted {
			t.Errorf("health: %v", err)
		}
		if _, err := e.client.UnaryCall(context.Background(), &testpb.SimpleRequest{}); err != nil {
			t.Errorf("exempt method: %v", err)
		}
		if _, err := e.client.EmptyCall(context.Background(), &testpb.Empty{}); status.Code(err) != codes.ResourceExhausted {
			t.Errorf("EmptyCall: %v", err)
		}
	})
	t.Run("service", func(t *testing.T) {
		s, err := NewServer(deny(), MetadataKey("x-api-key"), Config{Exempt: []string{sTest}})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, s, nil)
		st, err := e.client.StreamingOutputCall(context.Background(), &testpb.StreamingOutputCallRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); !errors.Is(err, io.EOF) {
			t.Errorf("exempt stream: %v", err)
		}
	})
	s, err := NewServer(deny(), MetadataKey("x-api-key"), Config{Exempt: []string{"/grpc.reflection.v1.ServerReflection/", "/grpc.reflection.v1alpha.ServerReflection/"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", "/grpc.health.v1.Health/Watch"} {
		if !s.Exempt(m) {
			t.Errorf("%s not exempt", m)
		}
	}
	if s.Exempt(mUnary) || s.Exempt("") || s.Exempt("garbage") {
		t.Error("a limited method is exempt")
	}
}

func TestPerMethod(t *testing.T) {
	unary, svc, def := &scripted{}, &scripted{}, &scripted{}
	refuse := func(l *scripted) {
		l.results = []result{{d: admit.Decision{Limit: admit.PerSecond(1), RetryAfter: time.Second}}}
	}
	s, err := NewServer(def, MetadataKey("x-api-key"), Config{Methods: []Method{{Pattern: mUnary, Name: "unary-calls", Limiter: unary}, {Pattern: sTest, Limiter: svc}}, LimitHealth: true})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, s, nil)
	ctx := withKey("k")
	if _, err := e.client.UnaryCall(ctx, &testpb.SimpleRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.health.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if len(unary.seen()) != 1 || len(svc.seen()) != 1 || len(def.seen()) != 1 {
		t.Fatalf("limiters asked %d, %d, %d times; want once each", len(unary.seen()), len(svc.seen()), len(def.seen()))
	}
	// The subject: the WithMethod name, else the pattern, else the method.
	for _, tc := range []struct {
		lim  *scripted
		call func() error
		want string
	}{
		{unary, func() error { _, err := e.client.UnaryCall(ctx, &testpb.SimpleRequest{}); return err }, "unary-calls"},
		{svc, func() error { _, err := e.client.EmptyCall(ctx, &testpb.Empty{}); return err }, sTest},
		{def, func() error { _, err := e.health.Check(ctx, &healthpb.HealthCheckRequest{}); return err }, "/grpc.health.v1.Health/Check"},
	} {
		refuse(tc.lim)
		_, _, qf := details(t, tc.call())
		if qf == nil || qf.GetViolations()[0].GetSubject() != tc.want {
			t.Errorf("subject %v, want %q", qf, tc.want)
		}
	}

	// Without a default limiter, other methods are not limited.
	only := &scripted{}
	s, err = NewServer(nil, MetadataKey("x-api-key"), Config{Methods: []Method{{Pattern: mEmpty, Limiter: only}}})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := s.Decide(ctx, mUnary, nil); err != nil || !d.Allowed {
		t.Errorf("unlimited method: %+v, %v", d, err)
	}
	if _, err := s.Decide(ctx, mEmpty, nil); err != nil || len(only.seen()) != 1 {
		t.Errorf("limited method: %v, asked %d times", err, len(only.seen()))
	}
}

func TestKeys(t *testing.T) {
	lim := &scripted{}
	s, err := NewServer(lim, FirstKey(MetadataKey("x-api-key"), MetadataKey("x-token-bin")), Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, s, nil)
	huge := strings.Repeat("k", 10000)
	calls := []context.Context{
		withKey("alice"),
		metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "", "x-token-bin", "\x00\xff"),
		metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "first", "x-api-key", "second"),
		context.Background(),
		withKey(huge),
		withKey(huge),
	}
	for _, ctx := range calls {
		if _, err := e.client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
			t.Fatal(err)
		}
	}
	d := digest("md:x-api-key:" + huge)
	want := []string{"md:x-api-key:alice", "md:x-token-bin:\x00\xff", "md:x-api-key:first", "", d, d}
	got := lim.seen()
	if len(got) != len(want) {
		t.Fatalf("keys %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d: key %q, want %q", i, got[i], want[i])
		}
	}
	if len(d) != len(digestPrefix)+64 || len(d) > defaultMaxKeyLength {
		t.Errorf("digest %q", d)
	}
}

func TestFailure(t *testing.T) {
	down := errors.New("dial tcp 10.0.0.7:6379: connect: connection refused")
	for _, tc := range []struct {
		name     string
		err      error
		failOpen bool
		want     codes.Code
	}{
		{"closed", down, false, codes.Unavailable},
		{"open", down, true, codes.OK},
		{"bad key under open", admit.ErrKeyTooLong, true, codes.Unavailable},
		{"bad cost under open", admit.ErrInvalidCost, true, codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := &scripted{results: []result{{err: tc.err}}}
			var seen atomic.Value
			s, err := NewServer(lim, MetadataKey("x-api-key"), Config{
				OnError:  func(_ context.Context, m string, err error) { seen.Store(m + ": " + err.Error()) },
				FailOpen: tc.failOpen,
			})
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, s, nil)
			_, err = e.client.EmptyCall(withKey("a"), &testpb.Empty{})
			if status.Code(err) != tc.want {
				t.Errorf("code %v, want %v", status.Code(err), tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "10.0.0.7") {
				t.Errorf("the limiter's error reached the client: %v", err)
			}
			if got, _ := seen.Load().(string); got != mEmpty+": "+tc.err.Error() {
				t.Errorf("error handler saw %q", got)
			}
		})
	}
}

func TestContextEnded(t *testing.T) {
	lim := &scripted{results: []result{{err: context.Canceled}}}
	s, err := NewServer(lim, MetadataKey("x-api-key"), Config{FailOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	_, err = s.UnaryServerInterceptor()(ctx, nil, &grpc.UnaryServerInfo{FullMethod: mEmpty}, func(context.Context, any) (any, error) {
		ran = true
		return nil, nil
	})
	if status.Code(err) != codes.Canceled || ran {
		t.Errorf("err %v (ran %v), want Canceled", err, ran)
	}
}

func TestHeaders(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	s, err := NewServer(newKeyed(t, admit.PerMinute(10), clk, "api"), MetadataKey("x-api-key"), Config{Headers: true})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, s, nil)
	var hdr metadata.MD
	if _, err := e.client.EmptyCall(withKey("a"), &testpb.Empty{}, grpc.Header(&hdr)); err != nil {
		t.Fatal(err)
	}
	if got := hdr.Get("ratelimit"); len(got) != 1 || got[0] != `"api";r=9` {
		t.Errorf("ratelimit %q", got)
	}
	if got := hdr.Get("ratelimit-policy"); len(got) != 1 || got[0] != `"api";q=10;w=60` {
		t.Errorf("ratelimit-policy %q", got)
	}
	st, err := e.client.StreamingOutputCall(withKey("a"), &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	hdr, err = st.Header()
	if err != nil {
		t.Fatal(err)
	}
	if got := hdr.Get("ratelimit"); len(got) != 1 || got[0] != `"api";r=8` {
		t.Errorf("stream ratelimit %q", got)
	}
}

func TestStreamRefusal(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	s, err := NewServer(newKeyed(t, admit.PerSecond(1), clk, "streams"), MetadataKey("x-api-key"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, s, nil)
	req := &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 3}, {Size: 3}, {Size: 3}}}
	// One stream is one event, however many messages it carries.
	st, err := e.client.StreamingOutputCall(withKey("a"), req)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	st, err = e.client.StreamingOutputCall(withKey("a"), req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv()
	_, ri, qf := details(t, err)
	if status.Code(err) != codes.ResourceExhausted || ri.GetRetryDelay().AsDuration() != time.Second || qf.GetViolations()[0].GetSubject() != "streams" {
		t.Fatalf("refused stream: %v", err)
	}
	if got := st.Trailer().Get("retry-after"); len(got) != 1 || got[0] != "1" {
		t.Errorf("retry-after trailer %q", got)
	}
	if e.svc.calls.Load() != 1 {
		t.Errorf("the handler ran %d times", e.svc.calls.Load())
	}
}

func TestConstructorErrors(t *testing.T) {
	// errKey and errMethod stand for errors wrapping
	// admit.ErrInvalidConfig whose message says what they say.
	errKey := errors.New("grpclimit: invalid key")
	errMethod := errors.New("invalid method pattern")
	lim := &scripted{}
	good := MetadataKey("x-api-key")
	for _, tc := range []struct {
		name string
		new  func() (*Server, error)
		want error
	}{
		{"nil limiter", func() (*Server, error) { return NewServer(nil, good, Config{}) }, admit.ErrInvalidConfig},
		{"zero key", func() (*Server, error) { return NewServer(lim, Key{}, Config{}) }, errKey},
		{"empty metadata name", func() (*Server, error) { return NewServer(lim, MetadataKey(""), Config{}) }, errKey},
		{"bad metadata name", func() (*Server, error) { return NewServer(lim, MetadataKey("x api key"), Config{}) }, errKey},
		{"metadata name with a colon", func() (*Server, error) { return NewServer(lim, MetadataKey(":authority"), Config{}) }, errKey},
		{"v4 bits", func() (*Server, error) { return NewServer(lim, PeerPrefixKey(0, 64), Config{}) }, errKey},
		{"v6 bits", func() (*Server, error) { return NewServer(lim, PeerPrefixKey(24, 129), Config{}) }, errKey},
		{"nil func", func() (*Server, error) { return NewServer(lim, FuncKey(nil), Config{}) }, errKey},
		{"no first key", func() (*Server, error) { return NewServer(lim, FirstKey(), Config{}) }, errKey},
		{"bad first key", func() (*Server, error) { return NewServer(lim, FirstKey(good, Key{}), Config{}) }, errKey},
		{"method pattern", func() (*Server, error) {
			return NewServer(lim, good, Config{Methods: []Method{{Pattern: "Method", Limiter: lim}}})
		}, errMethod},
		{"method pattern slashes", func() (*Server, error) {
			return NewServer(lim, good, Config{Methods: []Method{{Pattern: "/a/b/c", Limiter: lim}}})
		}, errMethod},
		{"method pattern empty service", func() (*Server, error) {
			return NewServer(lim, good, Config{Methods: []Method{{Pattern: "//m", Limiter: lim}}})
		}, errMethod},
		{"method nil limiter", func() (*Server, error) {
			return NewServer(lim, good, Config{Methods: []Method{{Pattern: mUnary, Limiter: nil}}})
		}, admit.ErrInvalidConfig},
		{"exempt pattern", func() (*Server, error) { return NewServer(lim, good, Config{Exempt: []string{"health"}}) }, errMethod},
		{"max key length", func() (*Server, error) { return NewServer(lim, good, Config{MaxKeyLength: 70}) }, admit.ErrInvalidConfig},
		{"negative max key length", func() (*Server, error) { return NewServer(lim, good, Config{MaxKeyLength: -1}) }, admit.ErrInvalidConfig},
		{"method pattern is a config error", func() (*Server, error) {
			return NewServer(lim, good, Config{Methods: []Method{{Pattern: "Method", Limiter: lim}}})
		}, admit.ErrInvalidConfig},
		{"nil decider", func() (*Server, error) { return NewServerDecider(nil, Config{}) }, admit.ErrInvalidConfig},
		{"decider with method", func() (*Server, error) {
			return NewServerDecider(DeciderFunc(func(context.Context, string, *compose.Held) (admit.Decision, error) {
				return admit.Decision{}, nil
			}), Config{Methods: []Method{{Pattern: mUnary, Limiter: lim}}})
		}, admit.ErrInvalidConfig},
	} {
		s, err := tc.new()
		ok := errors.Is(err, tc.want)
		if tc.want == errKey || tc.want == errMethod {
			ok = errors.Is(err, admit.ErrInvalidConfig) && strings.Contains(err.Error(), tc.want.Error())
		}
		if !ok || s != nil {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := NewServer(lim, good, Config{MaxKeyLength: 71}); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

func TestHeadersWithoutLimit(t *testing.T) {
	// A decision that names no limit has no figures to send.
	s, err := NewServerDecider(DeciderFunc(func(context.Context, string, *compose.Held) (admit.Decision, error) {
		return admit.Decision{Allowed: true}, nil
	}), Config{Headers: true})
	if err != nil {
		t.Fatal(err)
	}
	fs := &fakeStream{}
	ctx := grpc.NewContextWithServerTransportStream(context.Background(), fs)
	if _, err := s.UnaryServerInterceptor()(ctx, nil, benchInfo, benchHandler); err != nil {
		t.Fatal(err)
	}
	if fs.header != nil || fs.trailer != nil {
		t.Errorf("header %v, trailer %v", fs.header, fs.trailer)
	}
}
