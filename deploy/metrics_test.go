package deploy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"testing"

	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/server"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/redis/go-redis/v9"
)

// metricsPolicy has a rule of each kind whose metrics the dashboard and
// the alerts use: rates kept in Redis (one prefetching, one with a
// breaker falling back to memory), a rate and a concurrency cap kept in
// memory, a rate that delays requests beyond its burst (delay:), and
// adaptive limits.
const metricsPolicy = `domain: api
rules:
  - {name: per-user, match: user, rate: 2/s, store: redis, failure: {policy: fallback, breaker: true, local_share: 1, timeout: 1s}}
  - {name: hot, match: tenant, rate: 1000/s burst 100, store: redis, prefetch: auto, failure: {policy: fail_open, timeout: 1s}}
  - {name: per-address, match: remote_address, rate: 2/s, store: local}
  - {name: slots, match: route, concurrency: 2, store: local}
  - {name: paced, match: job, rate: 1/s, delay: 2s, store: local}
  - name: backend
    match: backend
    adaptive_concurrency: {min: 1, max: 10}
  - name: payments
    match: payments
    adaptive_rate: {min: 1/s, max: 100/s, initial: 10/s}
`

// exportedMetrics starts admit serve on a redis-server of its own, makes
// it decide requests of every rule of metricsPolicy (admitted and denied,
// Redis failing at the end so that the failure policies take over),
// scrapes its /metrics and returns the names of the series there (a
// histogram's _bucket, _sum and _count).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	rs := startRedis(t)
	// As admit serve's own clients: no retries, one dial; go-redis's log
	// of the dials refused once Redis is stopped is left out.
	redis.SetLogger(quietRedis{})
	client := redis.NewClient(&redis.Options{Addr: rs.addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = client.Close() })
	p, err := policy.Parse("policy.yaml", []byte(metricsPolicy))
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{
		HTTPAddr: "127.0.0.1:0", GRPCAddr: "off", Policy: p, RedisClient: client,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	check := func(key, value string, held *compose.Held) {
		t.Helper()
		var res policy.Result
		req := &policy.Request{Domain: "api", Hits: 1, Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: key, Value: value}}}}}
		if err := s.Engine().Check(context.Background(), req, held, &res); err != nil {
			t.Fatalf("%s=%s: %v", key, value, err)
		}
	}
	// Over each limit, so that both decisions are counted (paced's second
	// and third requests admitted with a delay, the next ones refused);
	// the slots of the concurrency caps are held until the end.
	for _, kv := range [][2]string{{"user", "u1"}, {"tenant", "t1"}, {"remote_address", "10.0.0.1"}, {"route", "/a"}, {"job", "j1"}, {"backend", "b1"}, {"payments", "p1"}} {
		for range 5 {
			check(kv[0], kv[1], new(compose.Held))
		}
	}
	for range 300 {
		check("tenant", "t1", nil) // a hot key: blocks prefetched
	}
	// Redis goes away: per-user's breaker opens and its fallback decides.
	rs.stop()
	for range 5 {
		check("user", "u2", nil)
	}

	resp, err := http.Get("http://" + s.HTTPAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Only the families with series have a TYPE line: a vector of
	// metrics none of whose label values has been seen is left out.
	names := map[string]bool{}
	typeLine := regexp.MustCompile(`^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$`)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := typeLine.FindStringSubmatch(line); m != nil {
			names[m[1]] = true
			if m[2] == "histogram" || m[2] == "summary" {
				names[m[1]+"_sum"], names[m[1]+"_count"] = true, true
			}
			if m[2] == "histogram" {
				names[m[1]+"_bucket"] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// quietRedis is a go-redis logger that writes nothing.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// promqlMetrics returns the metric names an expression selects, parsed
// with Prometheus's own PromQL parser.
func promqlMetrics(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == "__name__" && name == "" {
				name = m.Value
			}
		}
		if name == "" {
			err = fmt.Errorf("%s: a selector without a metric name", vs)
		}
		names = append(names, name)
		return nil
	})
	return names, err
}

// TestQueriesUseExportedMetrics: every metric the dashboards' queries and
// the rule files' expressions select is one admit serve exports (or one
// the rule files record), as a real server on Redis shows on /metrics
// after deciding requests of each kind of rule.
func TestQueriesUseExportedMetrics(t *testing.T) {
	exprs, recorded := readRules(t)
	for f, d := range readDashboards(t) {
		queries, err := dashboardQueries(d)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for where, q := range queries {
			exprs[f+": "+where] = expandVariables(q)
		}
	}
	exported := exportedMetrics(t)
	used := map[string]bool{}
	for where, e := range exprs {
		names, err := promqlMetrics(e)
		if err != nil {
			t.Errorf("%s: %v\n\t%s", where, err, e)
		}
		for _, n := range names {
			used[n] = true
			if !exported[n] && !recorded[n] {
				t.Errorf("%s uses %s, which admit serve does not export", where, n)
			}
		}
	}
	if len(used) < 10 {
		t.Errorf("the queries use %d metrics; the scan missed some", len(used))
	}
	t.Logf("%d expressions use %d metrics; admit serve exported %d names", len(exprs), len(used), len(exported))
	if testing.Verbose() {
		t.Logf("exported: %v", slices.Sorted(maps.Keys(exported)))
	}
}
