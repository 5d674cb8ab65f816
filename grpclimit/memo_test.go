package grpclimit

import (
	"context"
	"hash/maphash"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func newMemo() *refusalMemo { return &refusalMemo{seed: maphash.MakeSeed()} }

// sameRefusal fails t unless err and md are the refusal want with the
// trailers wantMD.
func sameRefusal(t testing.TB, err error, md metadata.MD, want *status.Status, wantMD metadata.MD) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || !proto.Equal(st.Proto(), want.Proto()) {
		t.Fatalf("status %v, want %v", st.Proto(), want.Proto())
	}
	if !reflect.DeepEqual(md, wantMD) {
		t.Fatalf("trailers %v, want %v", md, wantMD)
	}
}

// sameMD reports whether a and b are the same metadata map (not copies).
func sameMD(a, b metadata.MD) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func TestRefusalMemo(t *testing.T) {
	m := newMemo()
	var c partCache
	base := admit.Decision{Limit: admit.PerSecond(100), RetryAfter: 7*time.Millisecond + 3*time.Microsecond, Rule: "api"}
	md, err := m.refusal(&base, "api", &c)
	want, wantMD := refusal(base, "api", nil)
	sameRefusal(t, err, md, want, wantMD)
	if got := wantMD.Get("retry-after"); len(got) != 1 || got[0] != "1" {
		t.Fatalf("retry-after %q", got)
	}

	api := strings.Clone("api") // equal to "api", another string
	// The same shape: the values built for base, not copies.
	for _, d := range []admit.Decision{
		base,
		{Limit: base.Limit, RetryAfter: 7*time.Millisecond + 1, Rule: "api"},                        // the same delay, 8ms
		{Limit: base.Limit, RetryAfter: 8 * time.Millisecond, Remaining: -3, ResetAfter: time.Hour}, // remaining 0 as sent
		{Limit: base.Limit, RetryAfter: 7500 * time.Microsecond, Rule: api},
	} {
		md2, err2 := m.refusal(&d, api, &c)
		if err2 != err || !sameMD(md2, md) {
			t.Errorf("%+v: another refusal than the memo's", d)
		}
		want2, wantMD2 := refusal(d, api, nil)
		sameRefusal(t, err2, md2, want2, wantMD2)
	}

	// Other shapes: other values, each equal to the refusal built anew.
	seen := map[error]bool{err: true}
	for _, d := range []admit.Decision{
		{Limit: base.Limit, RetryAfter: 8*time.Millisecond + 1},
		{Limit: base.Limit, RetryAfter: 7 * time.Millisecond},
		{Limit: base.Limit, RetryAfter: 7 * time.Millisecond, Remaining: 1},
		{Limit: admit.PerSecond(101), RetryAfter: 7 * time.Millisecond},
		{Limit: admit.Limit{Rate: 100, Period: time.Second, Burst: 5}, RetryAfter: 7 * time.Millisecond},
		{Limit: base.Limit, RetryAfter: 7 * time.Millisecond, Kind: admit.KindQuota},
		{Limit: base.Limit, Kind: admit.KindConcurrency},
		{Limit: base.Limit},
		{Limit: base.Limit, RetryAfter: admit.InfDuration},
	} {
		for _, subject := range []string{"api", "api2", ""} {
			md2, err2 := m.refusal(&d, subject, &c)
			if seen[err2] {
				t.Errorf("%+v, %q: the refusal of another shape", d, subject)
			}
			seen[err2] = true
			want2, wantMD2 := refusal(d, subject, nil)
			sameRefusal(t, err2, md2, want2, wantMD2)
			if md3, err3 := m.refusal(&d, subject, &c); err3 != err2 || !sameMD(md3, md2) {
				t.Errorf("%+v, %q: not kept", d, subject)
			}
		}
	}

	// Every delay beyond a century is "never": one shape.
	never := admit.Decision{Limit: base.Limit, RetryAfter: admit.InfDuration}
	_, errNever := m.refusal(&never, "api", &c)
	longest := admit.Decision{Limit: base.Limit, RetryAfter: maxDelay + 1}
	if _, err2 := m.refusal(&longest, "api", &c); err2 != errNever {
		t.Error("RetryAfter maxDelay+1 is not refused as InfDuration is")
	}
}

// TestRefusalMemoEvictions builds more refusals than the memo keeps, on
// fewer rules than the part cache keeps, twice: each must be the refusal
// built anew, whether the memo still had it or not.
func TestRefusalMemoEvictions(t *testing.T) {
	m := newMemo()
	var c partCache
	const n = 4 * memoSlots
	kept := 0
	for pass := range 2 {
		for i := range n {
			d := admit.Decision{Limit: admit.PerMinute(int64(1 + i%7)), RetryAfter: time.Duration(i) * time.Millisecond, Remaining: int64(i % 3)}
			subject := "rule-" + strconv.Itoa(i%50)
			md, err := m.refusal(&d, subject, &c)
			want, wantMD := refusal(d, subject, nil)
			sameRefusal(t, err, md, want, wantMD)
			if pass == 1 {
				if md2, err2 := m.refusal(&d, subject, &c); err2 != err || !sameMD(md2, md) {
					t.Fatalf("refusal %d not kept", i)
				}
			}
		}
	}
	for i := range m.slots {
		if m.slots[i].Load() != nil {
			kept++
		}
	}
	// 1024 shapes in 256 slots: a hash that sent them to a few slots
	// would leave most empty.
	if kept < memoSlots*3/4 {
		t.Errorf("%d of %d slots used", kept, memoSlots)
	}
	if len(c.m) > maxCachedParts {
		t.Errorf("%d parts cached", len(c.m))
	}
}

// shapedLimiter refuses the key "md:x-api-key:N" with shapedDecision(N).
type shapedLimiter struct{}

func (shapedLimiter) Allow(_ context.Context, req admit.Request) (admit.Decision, error) {
	key := req.Key
	n, err := strconv.Atoi(strings.TrimPrefix(key, "md:x-api-key:"))
	if err != nil {
		return admit.Decision{}, err
	}
	return shapedDecision(n), nil
}

// shapedDecision returns a refusal of one of 60 shapes: 4 rules, 3 limits,
// 2 remainings, 5 delays (whole seconds and a nanosecond, or never).
func shapedDecision(n int) admit.Decision {
	n %= 60
	d := admit.Decision{
		Limit:      admit.PerSecond(int64(10 + n%3)),
		Remaining:  int64(n % 2),
		Rule:       "rule-" + strconv.Itoa(n%4),
		RetryAfter: time.Duration(n%5)*time.Second + 1,
	}
	if n%5 == 0 {
		d.RetryAfter = admit.InfDuration
	}
	return d
}

// TestRefusalsConcurrent makes refusals of many shapes from many clients
// at once, through a real server, unary calls and streams: each client
// must see the refusal of its own decision, and the refusals the memo
// shares must be left as they were built (by gRPC too, which merges the
// trailers into its own and marshals the status). Run it with -race.
func TestRefusalsConcurrent(t *testing.T) {
	s, err := NewServer(shapedLimiter{}, MetadataKey("x-api-key"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, s, nil)
	const clients, calls = 8, 60
	var wg sync.WaitGroup
	for g := range clients {
		wg.Go(func() {
			for j := range calls {
				n := g*7 + j*13
				ctx := withKey(strconv.Itoa(n))
				var (
					trailer metadata.MD
					err     error
				)
				if g%2 == 0 {
					_, err = e.client.EmptyCall(ctx, &testpb.Empty{}, grpc.Trailer(&trailer))
				} else {
					st, serr := e.client.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
					if serr != nil {
						t.Errorf("stream %d: %v", n, serr)
						return
					}
					_, err = st.Recv()
					trailer = st.Trailer()
				}
				d := shapedDecision(n)
				want, wantMD := refusal(d, d.Rule, nil)
				if got := status.Convert(err); !proto.Equal(got.Proto(), want.Proto()) {
					t.Errorf("call %d: status %v, want %v", n, got.Proto(), want.Proto())
					return
				}
				for _, k := range []string{"retry-after", "ratelimit", "ratelimit-policy"} {
					if got := trailer.Get(k); !reflect.DeepEqual(got, wantMD.Get(k)) {
						t.Errorf("call %d: trailer %s = %q, want %q", n, k, got, wantMD.Get(k))
					}
				}
			}
		})
	}
	wg.Wait()
	kept := 0
	for i := range s.memo.slots {
		m := s.memo.slots[i].Load()
		if m == nil {
			continue
		}
		kept++
		k := m.shape
		d := admit.Decision{Limit: k.limit, Kind: k.kind, Remaining: k.remaining, RetryAfter: k.delay}
		if k.delay < 0 {
			d.RetryAfter = admit.InfDuration
		}
		want, wantMD := refusal(d, k.subject, nil)
		sameRefusal(t, m.err, m.md, want, wantMD)
	}
	if kept == 0 {
		t.Error("no refusal kept")
	}
}

// TestRefusalMemoCollisions gives the memo two decisions that differ in
// one field of their shape and share a slot: each must get its own
// refusal, however they alternate.
func TestRefusalMemoCollisions(t *testing.T) {
	base := admit.Decision{Limit: admit.PerSecond(100), RetryAfter: 7 * time.Millisecond}
	for _, tc := range []struct {
		name         string
		a, b         admit.Decision
		subjA, subjB string
	}{
		{"subject", base, base, "api", "apj"},
		{"rate", base, admit.Decision{Limit: admit.Limit{Rate: 101, Period: time.Second, Burst: 100}, RetryAfter: base.RetryAfter}, "api", "api"},
		{"period", base, admit.Decision{Limit: admit.Limit{Rate: 100, Period: 2 * time.Second, Burst: 100}, RetryAfter: base.RetryAfter}, "api", "api"},
		{"burst", base, admit.Decision{Limit: admit.Limit{Rate: 100, Period: time.Second, Burst: 99}, RetryAfter: base.RetryAfter}, "api", "api"},
		{"kind", base, admit.Decision{Limit: base.Limit, RetryAfter: base.RetryAfter, Kind: admit.KindQuota}, "api", "api"},
		{"delay", base, admit.Decision{Limit: base.Limit, RetryAfter: 8 * time.Millisecond}, "api", "api"},
		{"never", base, admit.Decision{Limit: base.Limit, RetryAfter: admit.InfDuration}, "api", "api"},
		{"remaining", base, admit.Decision{Limit: base.Limit, RetryAfter: base.RetryAfter, Remaining: 1}, "api", "api"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ka, kb := shapeOf(&tc.a, tc.subjA), shapeOf(&tc.b, tc.subjB)
			if ka == kb {
				t.Fatal("one shape")
			}
			var m *refusalMemo
			for range 1 << 16 {
				if m = newMemo(); m.slot(&ka) == m.slot(&kb) {
					break
				}
			}
			if m.slot(&ka) != m.slot(&kb) {
				t.Fatal("no seed found that makes the shapes share a slot")
			}
			wantA, wantMDA := refusal(tc.a, tc.subjA, nil)
			wantB, wantMDB := refusal(tc.b, tc.subjB, nil)
			for range 2 {
				mdA, errA := m.refusal(&tc.a, tc.subjA, nil)
				sameRefusal(t, errA, mdA, wantA, wantMDA)
				mdB, errB := m.refusal(&tc.b, tc.subjB, nil)
				sameRefusal(t, errB, mdB, wantB, wantMDB)
				mdB2, errB2 := m.refusal(&tc.b, tc.subjB, nil)
				if errB2 != errB || !sameMD(mdB2, mdB) {
					t.Error("the last refusal is not kept")
				}
			}
		})
	}
}
