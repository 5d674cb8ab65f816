package policy

// Tests of Engine.Check: matching, tiers, shadow mode, replacements, costs, bad requests, inline limits, exemptions, keys and observers.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
)

func TestEngineExample(t *testing.T) {
	e, clock := engine(t, fileText(t, "testdata/example.yaml"))
	var h compose.Held
	defer h.Release()
	req := request("api",
		desc("remote_address", "203.0.113.7"),
		desc("user", "bob"),
		desc("tenant", "acme"),
		desc("route", "/login"),
		desc("generic_key", "global"))
	// per-user is 10/s burst 20: the most restrictive layer.
	for i := range 20 {
		res := check(t, e, req, &h)
		want(t, fmt.Sprint("request ", i), res.Decision, true, "per-user", int64(19-i))
		if len(res.Statuses) != 5 {
			t.Fatalf("%d statuses", len(res.Statuses))
		}
	}
	res := check(t, e, req, &h)
	want(t, "request 20", res.Decision, false, "per-user", 0)
	if res.Decision.RetryAfter != 100*time.Millisecond {
		t.Errorf("RetryAfter %v, want 100ms", res.Decision.RetryAfter)
	}
	st := res.Statuses
	if st[1].Code != CodeOverLimit || st[1].Rule != "per-user" || st[1].Decision.Limit != admit.PerSecond(10).WithBurst(20) {
		t.Errorf("per-user status %+v", st[1])
	}
	// per-ip (50/s) admitted it first, and got its event back: 30 left.
	if st[0].Code != CodeOK || st[0].Decision.Remaining != 30 || st[0].Skipped {
		t.Errorf("per-ip status %+v", st[0])
	}
	// The tenant, route and global layers come later: never asked.
	for _, i := range []int{2, 3, 4} {
		if st[i].Code != CodeOK || !st[i].Skipped || st[i].Decision.Remaining != 0 {
			t.Errorf("status %d: %+v", i, st[i])
		}
	}
	if st[2].Tier != "enterprise" || st[2].Decision.Limit != admit.PerSecond(1000).WithBurst(2000) || st[2].Decision.Kind != admit.KindRate {
		t.Errorf("tenant status %+v", st[2])
	}
	if h.Len() != 40 {
		t.Errorf("held %d grants, want 2 per admitted request", h.Len())
	}
	clock.Advance(100 * time.Millisecond)
	res = check(t, e, req, &h)
	want(t, "after 100ms", res.Decision, true, "per-user", 0)
	// An exempt address is not limited by per-ip.
	res = check(t, e, request("api", desc("remote_address", "10.1.2.3")), nil)
	if !res.Decision.Allowed || !res.Statuses[0].Exempt || res.Decision.Limit != admit.Unlimited {
		t.Errorf("exempt: %+v", res)
	}
}

func TestEngineTiers(t *testing.T) {
	e, clock := engine(t, `
tier_tables:
  plans:
    default: free
    tiers:
      free: {rate: 2/min, quota: 3/day, concurrency: 1}
      pro: {rate: 10/min}
      internal: {unlimited: true}
    assign: {acme: pro, ops: internal}
domain: api
rules:
  - {name: tenant, match: tenant, tiers: plans}
`)
	var h compose.Held
	res := check(t, e, request("api", desc("tenant", "unknown")), &h)
	want(t, "free", res.Decision, true, "tenant/free/concurrency", 0)
	if res.Statuses[0].Tier != "free" || res.Statuses[0].Decision.Kind != admit.KindConcurrency {
		t.Errorf("status %+v", res.Statuses[0])
	}
	// One in flight: the next is refused by the cap, and the rate and
	// quota it passed get their events back.
	res = check(t, e, request("api", desc("tenant", "unknown")), &h)
	want(t, "second in flight", res.Decision, false, "tenant/free/concurrency", 0)
	if res.Decision.Kind != admit.KindConcurrency {
		t.Errorf("kind %v", res.Decision.Kind)
	}
	h.Release()
	res = check(t, e, request("api", desc("tenant", "unknown")), &h)
	want(t, "after release", res.Decision, true, "tenant/free/rate", 0)
	h.Release()
	res = check(t, e, request("api", desc("tenant", "unknown")), &h)
	want(t, "rate", res.Decision, false, "tenant/free/rate", 0)
	h.Release()
	// The day's quota: 3 events, 2 used; the rate refills one per 30s.
	clock.Advance(30 * time.Second)
	res = check(t, e, request("api", desc("tenant", "unknown")), &h)
	want(t, "third", res.Decision, true, "tenant/free/quota", 0)
	h.Release()
	clock.Advance(time.Minute)
	res = check(t, e, request("api", desc("tenant", "unknown")), &h)
	want(t, "quota", res.Decision, false, "tenant/free/quota", 0)
	if res.Decision.RetryAfter != 12*time.Hour-90*time.Second || res.Decision.Kind != admit.KindQuota {
		t.Errorf("quota RetryAfter %v (kind %v), want until midnight", res.Decision.RetryAfter, res.Decision.Kind)
	}
	// A pro tenant has its own limits, and no cap.
	for i := range 10 {
		res = check(t, e, request("api", desc("tenant", "acme")), nil)
		want(t, fmt.Sprint("pro ", i), res.Decision, true, "tenant/pro", int64(9-i))
	}
	res = check(t, e, request("api", desc("tenant", "ops")), nil)
	if !res.Decision.Allowed || !res.Statuses[0].Unlimited || res.Statuses[0].Tier != "internal" || res.Statuses[0].Decision.Remaining != math.MaxInt64 {
		t.Errorf("internal: %+v", res.Statuses[0])
	}
	clock.Set(t0.Add(12 * time.Hour))
	res = check(t, e, request("api", desc("tenant", "unknown")), &h)
	want(t, "next day", res.Decision, true, "tenant/free/concurrency", 0)
	h.Release()
}

func TestEngineShadow(t *testing.T) {
	const src = `
domain: api
rules:
  - {name: user, match: user, rate: 1/min}
  - {name: trial, match: tenant, rate: 1/min, shadow: true}
`
	e, _ := engine(t, src)
	req := request("api", desc("user", "u"), desc("tenant", "t"))
	res := check(t, e, req, nil)
	want(t, "first", res.Decision, true, "user", 0)
	if res.ShadowRefused || res.Statuses[1].WouldRefuse || !res.Statuses[1].Shadow || res.Statuses[1].Decision.Remaining != 0 {
		t.Errorf("first: %+v", res)
	}
	// user refuses: the shadow rule is not asked.
	res = check(t, e, req, nil)
	want(t, "second", res.Decision, false, "user", 0)
	if !res.Statuses[1].Skipped || res.ShadowRefused {
		t.Errorf("second: %+v", res)
	}
	// The shadow rule alone: it would refuse, and does not.
	res = check(t, e, request("api", desc("tenant", "t")), nil)
	want(t, "shadow", res.Decision, true, "", math.MaxInt64)
	st := res.Statuses[0]
	if st.Code != CodeOK || !st.Shadow || !st.WouldRefuse || !res.ShadowRefused || res.Shadow.Rule != "trial" || res.Shadow.Allowed {
		t.Errorf("shadow: %+v, %+v", st, res.Shadow)
	}
	// The engine's shadow mode: nothing refuses.
	g, _ := engine(t, src, Config{Shadow: true})
	for range 3 {
		res = check(t, g, req, nil)
		if !res.Decision.Allowed {
			t.Fatalf("global shadow refused: %+v", res)
		}
	}
	if !res.ShadowRefused || !res.Statuses[0].WouldRefuse || res.Statuses[0].Code != CodeOK {
		t.Errorf("global shadow: %+v", res)
	}
	// A domain in shadow mode.
	d, _ := engine(t, "shadow: true\n"+src)
	check(t, d, req, nil)
	if res := check(t, d, req, nil); !res.Decision.Allowed || !res.Statuses[0].WouldRefuse {
		t.Errorf("domain shadow: %+v", res)
	}
}

func TestEngineMatching(t *testing.T) {
	e, _ := engine(t, `
domain: api
rules:
  - {name: any-ip, match: ip, rate: 2/min}
  - {name: blocked-ip, match: [{key: ip, value: 50.0.0.5}], rate: 0/s}
  - {name: api-users, match: [{key: path, prefix: /api/users}], rate: 3/min}
  - {name: api, match: [{key: path, prefix: /api/}], rate: 1/min}
  - {name: nested, match: [tenant, {key: path, value: /login}], rate: 1/min}
  - {name: shared, match: [{key: region, prefix: eu-}], rate: 1/min, shared: true}
  - {name: free, match: [{key: ip, value: 127.0.0.1}], unlimited: true}
`)
	for _, tc := range []struct {
		d    Descriptor
		rule string
	}{
		{desc("ip", "1.2.3.4"), "any-ip"},
		{desc("ip", "50.0.0.5"), "blocked-ip"},
		{desc("ip", "127.0.0.1"), "free"},
		{desc("path", "/api/x"), "api"},
		{desc("path", "/api/users/1"), "api-users"},
		{desc("path", "/api/"), "api"},
		{desc("path", "/api"), ""},
		{desc("path", "/other"), ""},
		{desc("tenant", "t"), ""},
		{desc("tenant", "t", "path", "/login"), "nested"},
		{desc("tenant", "t", "path", "/x"), ""},
		{desc("tenant", "t", "path", "/login", "x", "y"), ""},
		{desc("ip", "1.2.3.4", "path", "/login"), ""},
		{desc("unknown", "v"), ""},
	} {
		res := check(t, e, request("api", tc.d), nil)
		if res.Statuses[0].Rule != tc.rule {
			t.Errorf("%v matched %q, want %q", tc.d.Entries, res.Statuses[0].Rule, tc.rule)
		}
	}
	// The blocked address is refused at once; others are limited per
	// address.
	res := check(t, e, request("api", desc("ip", "50.0.0.5")), nil)
	want(t, "blocked", res.Decision, false, "blocked-ip", 0)
	if res.Decision.RetryAfter != admit.InfDuration {
		t.Errorf("blocked RetryAfter %v", res.Decision.RetryAfter)
	}
	check(t, e, request("api", desc("ip", "9.9.9.9")), nil)
	res = check(t, e, request("api", desc("ip", "9.9.9.9")), nil)
	want(t, "second of 9.9.9.9", res.Decision, true, "any-ip", 0)
	res = check(t, e, request("api", desc("ip", "9.9.9.9")), nil)
	want(t, "third of 9.9.9.9", res.Decision, false, "any-ip", 0)
	res = check(t, e, request("api", desc("ip", "9.9.9.8")), nil)
	want(t, "another address", res.Decision, true, "any-ip", 1)
	// A shared rule: one key for all the values it matches.
	res = check(t, e, request("api", desc("region", "eu-west")), nil)
	want(t, "eu-west", res.Decision, true, "shared", 0)
	res = check(t, e, request("api", desc("region", "eu-north")), nil)
	want(t, "eu-north", res.Decision, false, "shared", 0)
	// Unknown domains match nothing.
	res = check(t, e, request("nope", desc("ip", "50.0.0.5")), nil)
	if !res.Decision.Allowed || res.Statuses[0].Rule != "" || res.Decision.Limit != admit.Unlimited || e.HasDomain("nope") || !e.HasDomain("api") {
		t.Errorf("unknown domain: %+v", res)
	}
}

// TestEngineKeysInjective: values that concatenate alike never share a
// key.
func TestEngineKeysInjective(t *testing.T) {
	e, _ := engine(t, `
domain: api
rules:
  - {name: pair, match: [a, b], rate: 1/min}
`)
	for _, vals := range [][2]string{{"x:y", "z"}, {"x", "y:z"}, {"x", ":yz"}, {"", "x:yz"}, {"1:x", "yz"}, {"x:yz", ""}} {
		res := check(t, e, request("api", desc("a", vals[0], "b", vals[1])), nil)
		want(t, fmt.Sprint(vals), res.Decision, true, "pair", 0)
	}
	res := check(t, e, request("api", desc("a", "x", "b", "y:z")), nil)
	want(t, "x, y:z again", res.Decision, false, "pair", 0)
}

func TestEngineReplaces(t *testing.T) {
	e, _ := engine(t, `
domain: api
rules:
  - {name: reads, match: [{key: kind, value: read}, user], rate: 1/min}
  - {name: one-endpoint, match: [{key: endpoint, value: /special}, user], rate: 5/min, replaces: reads}
`)
	reads := desc("kind", "read", "user", "u")
	special := desc("endpoint", "/special", "user", "u")
	res := check(t, e, request("api", reads, special), nil)
	want(t, "both", res.Decision, true, "one-endpoint", 4)
	if !res.Statuses[0].Replaced || res.Statuses[0].Decision.Remaining != 0 {
		t.Errorf("replaced status %+v", res.Statuses[0])
	}
	// Replaced, reads was not counted: it still has its one event.
	res = check(t, e, request("api", reads), nil)
	want(t, "reads alone", res.Decision, true, "reads", 0)
}

func TestEngineHits(t *testing.T) {
	e, _ := engine(t, `
domain: api
rules:
  - {name: a, match: a, rate: 10/min}
  - {name: b, match: b, rate: 10/min}
  - {name: c, match: c, concurrency: 3}
`)
	req := &Request{Domain: "api", Hits: 4, Descriptors: []Descriptor{desc("a", "1"), desc("b", "1")}}
	req.Descriptors[1].Hits, req.Descriptors[1].OwnHits = 0, true // a peek
	res := check(t, e, req, nil)
	want(t, "4 and a peek", res.Decision, true, "a", 6)
	if res.Statuses[1].Decision.Remaining != 10 {
		t.Errorf("peek consumed: %+v", res.Statuses[1])
	}
	req.Descriptors[1].Hits = 7
	res = check(t, e, req, nil)
	want(t, "4 and 7", res.Decision, true, "a", 2)
	res = check(t, e, req, nil)
	want(t, "4 more", res.Decision, false, "a", 2)
	// More than the burst can never pass.
	req.Hits = 11
	res = check(t, e, &Request{Domain: "api", Hits: 11, Descriptors: []Descriptor{desc("b", "2")}}, nil)
	if res.Decision.Allowed || res.Decision.RetryAfter != admit.InfDuration {
		t.Errorf("11 of 10: %+v", res.Decision)
	}
	// Slots: 4 of a cap of 3 is a refusal, not an error.
	var h compose.Held
	res = check(t, e, &Request{Domain: "api", Hits: 4, Descriptors: []Descriptor{desc("c", "x")}}, &h)
	if res.Decision.Allowed || h.Len() != 0 {
		t.Errorf("4 slots of 3: %+v", res.Decision)
	}
	// A peek of a concurrency cap needs no Held.
	res = check(t, e, &Request{Domain: "api", Hits: 0, Descriptors: []Descriptor{desc("c", "x")}}, nil)
	want(t, "peek of slots", res.Decision, true, "c", 3)
}

func TestEngineBadRequests(t *testing.T) {
	e, _ := engine(t, `
domain: api
rules:
  - {name: a, match: a, rate: 10/min}
  - {name: c, match: c, concurrency: 3}
`)
	ctx := context.Background()
	neg := request("api", desc("a", "1"))
	neg.Descriptors[0].Hits, neg.Descriptors[0].OwnHits = -1, true
	for _, tc := range []struct {
		req  *Request
		h    *compose.Held
		want error
	}{
		{&Request{Domain: "api", Hits: -1, Descriptors: []Descriptor{desc("a", "1")}}, nil, ErrInvalidRequest},
		{neg, nil, ErrInvalidRequest},
		{request("api", Descriptor{}), nil, ErrInvalidRequest},
		{request("api", desc("c", "1")), nil, compose.ErrNeedHeld},
	} {
		var res Result
		err := e.Check(ctx, tc.req, tc.h, &res)
		if !errors.Is(err, tc.want) || res.Decision.Allowed {
			t.Errorf("%+v: %v, %+v; want %v and a refusal", tc.req, err, res.Decision, tc.want)
		}
	}
	// A key longer than the limiters' maximum (a value of 5000 bytes, or
	// one of 4096 bytes with its length) is stored by its digest: it is
	// decided, each such value on its own (values differing in their
	// last byte are two keys), and counts as the same value again.
	long := strings.Repeat("x", 5000)
	for _, v := range []string{long, long[:4096]} {
		for i, tc := range []struct {
			value  string
			remain int64
		}{{v, 9}, {v[:len(v)-1] + "y", 9}, {v, 8}} {
			var res Result
			if err := e.Check(ctx, request("api", desc("a", tc.value)), nil, &res); err != nil || !res.Decision.Allowed || res.Decision.Remaining != tc.remain {
				t.Errorf("long key of %d bytes, check %d: %v, %+v; want remaining %d", len(v), i, err, res.Decision, tc.remain)
			}
		}
	}
	// A canceled context is not the limiters' business in memory; the
	// engine still decides.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := e.Check(ctx, request("api", desc("a", "1")), nil, &res); !errors.Is(err, admit.ErrClosed) || err.Error() != "admit: closed: policy: engine closed" || res.Decision.Allowed {
		t.Errorf("after Close: %v", err)
	}
}

func TestEngineOverrides(t *testing.T) {
	e, clock := engine(t, `
domain: api
rules:
  - {name: a, match: a, rate: 1/min}
`, Config{MaxOverrides: 2})
	l := admit.PerMinute(3)
	d := desc("a", "1")
	d.Limit = &l
	for i := range 3 {
		res := check(t, e, request("api", d), nil)
		want(t, fmt.Sprint("override ", i), res.Decision, true, "api/override/3/min", int64(2-i))
		if st := res.Statuses[0]; !st.Override || st.Decision.Limit != l || st.Rule != "api/override/3/min" {
			t.Errorf("status %+v", st)
		}
	}
	res := check(t, e, request("api", d), nil)
	want(t, "override 3", res.Decision, false, "api/override/3/min", 0)
	// A fixed window: the next minute starts afresh.
	if res.Decision.RetryAfter != time.Minute {
		t.Errorf("RetryAfter %v", res.Decision.RetryAfter)
	}
	clock.Advance(time.Minute)
	res = check(t, e, request("api", d), nil)
	want(t, "next window", res.Decision, true, "api/override/3/min", 2)
	// The rule a is untouched.
	res = check(t, e, request("api", desc("a", "1")), nil)
	want(t, "rule a", res.Decision, true, "a", 0)
	// Zero refuses; an invalid limit is a bad request; the cap of
	// distinct limits holds.
	zero := admit.Limit{Period: time.Second}
	d.Limit = &zero
	res = check(t, e, request("api", d), nil)
	want(t, "zero", res.Decision, false, "api/override/0/s", 0)
	bad := admit.Limit{Rate: 5}
	d.Limit = &bad
	var out Result
	if err := e.Check(context.Background(), request("api", d), nil, &out); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("invalid inline limit: %v", err)
	}
	third := admit.PerHour(7)
	d.Limit = &third
	if err := e.Check(context.Background(), request("api", d), nil, &out); !errors.Is(err, admit.ErrTooManyKeys) || !strings.Contains(err.Error(), "policy: too many distinct inline limits: domain \"api\" has 2 already") || out.Decision.Allowed {
		t.Errorf("third override: %v", err)
	}
}

// TestEngineUndo: a request refused by a later layer gives back what the
// earlier ones took, whatever their kind.
func TestEngineUndo(t *testing.T) {
	e, _ := engine(t, `
domain: api
rules:
  - {name: rate, match: a, rate: 5/min}
  - {name: quota, match: b, quota: 5/day}
  - {name: slots, match: c, concurrency: 5}
  - {name: gate, match: z, rate: 1/min}
`)
	var h compose.Held
	req := request("api", desc("a", "1"), desc("b", "1"), desc("c", "1"), desc("z", "1"))
	res := check(t, e, req, &h)
	want(t, "first", res.Decision, true, "gate", 0)
	res = check(t, e, req, &h)
	// The slots layer is last: the gate refuses before it.
	want(t, "second", res.Decision, false, "gate", 0)
	if res.Statuses[0].Decision.Remaining != 4 || res.Statuses[1].Decision.Remaining != 4 || !res.Statuses[2].Skipped {
		t.Errorf("statuses %+v", res.Statuses)
	}
	h.Release()
	res = check(t, e, request("api", desc("a", "1"), desc("b", "1"), desc("c", "1")), &h)
	want(t, "without the gate", res.Decision, true, "quota", 3)
	if res.Statuses[1].Decision.Remaining != 3 || res.Statuses[2].Decision.Remaining != 4 {
		t.Errorf("the refused request consumed: %+v", res.Statuses)
	}
	h.Release()
}

func TestEngineAlgorithms(t *testing.T) {
	for _, alg := range admit.Algorithms() {
		e, clock := engine(t, fmt.Sprintf("domain: api\nrules:\n  - {name: r, match: k, rate: 2/s, algorithm: %v}\n", alg))
		for i := range 2 {
			res := check(t, e, request("api", desc("k", "v")), nil)
			want(t, fmt.Sprint(alg, i), res.Decision, true, "r", int64(1-i))
		}
		res := check(t, e, request("api", desc("k", "v")), nil)
		want(t, fmt.Sprint(alg, " refused"), res.Decision, false, "r", 0)
		clock.Advance(2 * time.Second)
		res = check(t, e, request("api", desc("k", "v")), nil)
		if !res.Decision.Allowed {
			t.Errorf("%v after two seconds: %+v", alg, res.Decision)
		}
	}
}

func TestEngineExemptions(t *testing.T) {
	e, _ := engine(t, `
domain: api
rules:
  - name: ip
    match: [tenant, ip]
    rate: 0/s
    exempt: {ip: [10.0.0.0/8, "2001:db8::/32", 192.0.2.1, not-an-ip], tenant: [internal]}
`)
	for _, tc := range []struct {
		tenant, ip string
		exempt     bool
	}{
		{"t", "10.9.8.7", true},
		{"t", "::ffff:10.1.1.1", true},
		{"t", "2001:db8::1", true},
		{"t", "192.0.2.1", true},
		{"t", "not-an-ip", true},
		{"internal", "8.8.8.8", true},
		{"t", "11.0.0.1", false},
		{"t", "2001:db9::1", false},
		{"t", "10.0.0.1.5", false},
	} {
		res := check(t, e, request("api", desc("tenant", tc.tenant, "ip", tc.ip)), nil)
		if res.Statuses[0].Exempt != tc.exempt || res.Decision.Allowed != tc.exempt {
			t.Errorf("%s %s: exempt %v, allowed %v; want %v", tc.tenant, tc.ip, res.Statuses[0].Exempt, res.Decision.Allowed, tc.exempt)
		}
	}
}

// TestKeysInjective: the encoding of a descriptor's values never gives
// two different lists of values the same key.
func TestKeysInjective(t *testing.T) {
	atoms := []string{"", "1", ":", "1:", ":1", "a", "10", "0:"}
	seen := map[string][]string{}
	var walk func(vals []string)
	walk = func(vals []string) {
		var key []byte
		for _, v := range vals {
			key = appendValue(key, v)
		}
		if prev, dup := seen[string(key)]; dup {
			t.Fatalf("%q and %q share the key %q", prev, vals, key)
		}
		seen[string(key)] = append([]string(nil), vals...)
		if len(vals) < 3 {
			for _, a := range atoms {
				walk(append(vals, a))
			}
		}
	}
	walk(nil)
	if len(seen) != 1+8+64+512 {
		t.Errorf("%d keys", len(seen))
	}
}

// observer keeps the keys of the decisions it is told of.
type observer struct {
	admit.NopObserver
	mu   sync.Mutex
	keys []string
}

func (o *observer) Decided(ev admit.DecisionEvent) {
	o.mu.Lock()
	o.keys = append(o.keys, ev.Key)
	o.mu.Unlock()
}

// TestEngineObserver: an observer sees every limiter's decisions, and the
// keys it keeps stay what they were (they are not the engine's reused
// buffer).
func TestEngineObserver(t *testing.T) {
	obs := &observer{}
	e, _ := engine(t, `
domain: api
rules:
  - {name: a, match: user, rate: 10/min}
  - {name: b, match: [tenant, user], quota: 10/day}
`, Config{Options: admit.Options{Observer: obs}})
	var res Result
	for _, u := range []string{"alice", "bob", "carol"} {
		if err := e.Check(context.Background(), request("api", desc("user", u), desc("tenant", "t", "user", u)), nil, &res); err != nil {
			t.Fatal(err)
		}
	}
	want := "5:alice 1:t5:alice 3:bob 1:t3:bob 5:carol 1:t5:carol"
	if got := strings.Join(obs.keys, " "); got != want {
		t.Errorf("keys %q, want %q", got, want)
	}
}

// TestOnRefused: Config.OnRefused is told each refusal Check reports,
// jitter included, once, and nothing of admissions or of errors.
func TestOnRefused(t *testing.T) {
	p, err := Parse("p.yaml", []byte("domain: api\nrules:\n  - {name: r, match: user, rate: 1/min}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var told []admit.Decision
	cfg := clocked(admittest.NewManualClock(admittest.Epoch))
	cfg.RetryJitter = admit.Jitter{Fraction: 0.1}
	cfg.OnRefused = func(d admit.Decision) { told = append(told, d) }
	e, err := newEngine(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var res Result
	var results []admit.Decision
	for range 3 {
		if err := e.Check(context.Background(), request("api", desc("user", "u")), nil, &res); err != nil {
			t.Fatal(err)
		}
		results = append(results, res.Decision)
	}
	bad := &Request{Domain: "api", Hits: -1, Descriptors: []Descriptor{desc("user", "u")}}
	if err := e.Check(context.Background(), bad, nil, &res); err == nil {
		t.Fatal("a negative cost decided")
	}
	if !results[0].Allowed || len(told) != 2 || told[0] != results[1] || told[1] != results[2] {
		t.Errorf("told %+v; the results %+v", told, results)
	}
}
