package policy

// The delay mode of a rule (Rule.Delay): decoding, validation with
// file:line, and the engine's decisions in memory and in Redis.

import (
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore"
	"github.com/redis/go-redis/v9"
)

const delayPolicy = `
domain: api
rules:
  - name: per-ip
    match: remote_address
    rate: 10/s burst 2
    delay: 150ms
  - name: per-tenant
    match: tenant
    rate: 3/s
`

func TestParseDelay(t *testing.T) {
	p, err := Parse("p.yaml", []byte(delayPolicy))
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Domains[0].Rules[0]; r.Delay != 150*time.Millisecond {
		t.Fatalf("delay %v", r.Delay)
	}
	if r := p.Domains[0].Rules[1]; r.Delay != 0 {
		t.Fatalf("delay %v", r.Delay)
	}
}

func TestParseDelayBad(t *testing.T) {
	src := "rules:\n" +
		"  - {name: a, match: k, rate: 1/s, delay: -1s}\n" +
		"  - {name: b, match: k2, rate: 1/s, delay: 11m}\n" +
		"  - {name: c, match: k3, quota: 5/day, delay: 1s}\n" +
		"  - {name: d, match: k4, concurrency: 5, delay: 1s}\n" +
		"  - {name: e, match: k5, rate: 1/s, algorithm: fixed_window, delay: 1s}\n" +
		"  - {name: f, match: k6, rate: 1/s, store: redis, prefetch: auto, delay: 1s}\n" +
		"  - {name: g, match: k7, rate: 1/s, delay: soon}\n" +
		"  - {name: h, match: k8, rate: [1/s, 10/min], delay: 1s}\n" +
		"  - {name: i, match: [k9, t], rate: 1/s, share: {key: t}, delay: 1s}\n"
	_, err := parseAdmit("p.yaml", []byte(src))
	if err == nil {
		t.Fatal("loaded")
	}
	want := []string{
		`p.yaml:2:43: rules[0].delay: duration -1s is negative`,
		`p.yaml:3:44: rules[1].delay: delay 11m0s is longer than 10m0s: a delayed request holds its connection while it waits`,
		`p.yaml:4:47: rules[2].delay: delay on a rule with no rate: a delay waits for a rate's slot; a quota or a concurrency cap admits now or not at all`,
		`p.yaml:5:49: rules[3].delay: delay on a rule with no rate: a delay waits for a rate's slot; a quota or a concurrency cap admits now or not at all`,
		`p.yaml:6:69: rules[4].delay: delay on a rule with a fixed_window rate: only gcra, token_bucket and leaky_bucket can hold a slot ahead`,
		`p.yaml:7:74: rules[5].delay: delay with prefetch: a block is spent at once, it cannot hold a slot ahead (drop prefetch, or the delay)`,
		`p.yaml:8:44: rules[6].delay: want a duration (50ms, 30s, 1m), got "soon"`,
		`p.yaml:9:54: rules[7].delay: delay on a rule with several rates: their limiter admits now or not at all (give the rule one rate, or split it)`,
		`p.yaml:10:66: rules[8].delay: delay with share: a share admits now or not at all (drop share, or the delay)`,
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

// TestEngineDelay: a rule with a delay admits a request beyond its burst
// with the wait for its slot, up to the delay, and refuses beyond it; a
// later rule's refusal gives the delayed slot back.
func TestEngineDelay(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		e, clock := engine(t, delayPolicy)
		testEngineDelay(t, e, clock.Now())
	})
	run := func(t *testing.T, client redis.UniversalClient) {
		p, err := Parse("p.yaml", []byte(delayPolicy))
		if err != nil {
			t.Fatal(err)
		}
		slowMachine(p)
		clock := admittest.NewManualClock(t0)
		e, err := newEngine(p, withRedis(redisStore(t, client, redisstore.Config{}), clock))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		testEngineDelay(t, e, clock.Now())
	}
	t.Run("redis", func(t *testing.T) { run(t, redistest.Standalone(t).Client(t)) })
	t.Run("cluster", func(t *testing.T) { run(t, redistest.SharedCluster(t).Client(t)) })
}

func testEngineDelay(t *testing.T, e *Engine, now time.Time) {
	const ms = time.Millisecond
	req := func(addr, tenant string) *Request {
		return request("api", desc("remote_address", addr), desc("tenant", tenant))
	}
	var h compose.Held
	for i, addr := range []string{"a", "a", "b"} { // per-ip a is empty, acme's 3 are taken
		if d := check(t, e, req(addr, "acme"), &h).Decision; !d.Allowed || d.Delay != 0 {
			t.Fatalf("request %d: %+v", i, d)
		}
	}
	// a's slot in 100ms, but acme refuses: the slot is given back.
	if d := check(t, e, req("a", "acme"), &h).Decision; d.Allowed || d.Rule != "per-tenant" {
		t.Fatalf("a for acme: %+v, want per-tenant's refusal", d)
	}
	res := check(t, e, req("a", "globex"), &h)
	if d := res.Decision; !d.Allowed || d.Delay != 100*ms || !d.TimeToAct.Equal(now.Add(100*ms)) {
		t.Fatalf("a for globex: %+v, want a delay of 100ms", d)
	}
	if st := res.Statuses[0]; st.Code != CodeOK || st.Decision.Delay != 100*ms || st.Rule != "per-ip" {
		t.Fatalf("its per-ip status: %+v", st)
	}
	// The next would wait 200ms, more than 150ms: refused, holding nothing.
	res = check(t, e, req("a", "globex"), &h)
	if d := res.Decision; d.Allowed || d.Rule != "per-ip" || d.RetryAfter != 200*ms || d.Delay != 0 {
		t.Fatalf("a again: %+v, want per-ip's refusal with RetryAfter 200ms", d)
	}
	if d := check(t, e, req("a", "initech"), &h).Decision; d.Allowed || d.RetryAfter != 200*ms {
		t.Fatalf("a once more: %+v, want the same refusal (nothing was held)", d)
	}
}
