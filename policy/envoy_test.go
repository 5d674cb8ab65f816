package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
)

// envoySMS is a configuration in envoyproxy/ratelimit's format exercising
// its semantics: nesting, a value-less key (a limit per value), the most
// specific match, requests_per_unit 0, unlimited, shadow_mode, a trailing
// wildcard, a whitelisted descriptor, and replaces.
const envoySMS = `
domain: sms
descriptors:
  # Promotions: 2 per hour to each phone number.
  - key: campaign
    value: promo
    descriptors:
      - key: phone
        rate_limit:
          unit: hour
          requests_per_unit: 2
  # Any message: 4 per day to each phone number...
  - key: phone
    rate_limit:
      unit: day
      requests_per_unit: 4
  # ...but none to this one.
  - key: phone
    value: "+15550000000"
    rate_limit:
      unit: second
      requests_per_unit: 0
  - key: partner
    value: internal
    rate_limit:
      unlimited: true
  - key: partner
    value: beta
    shadow_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 1
  - key: path
    value: /v1/*
    rate_limit:
      unit: minute
      requests_per_unit: 3
  - key: healthcheck
  - key: region
    descriptors:
      - key: user
        value: vip
        rate_limit:
          name: vip
          unit: minute
          requests_per_unit: 1
  - key: plan
    value: gold
    descriptors:
      - key: user
        value: vip
        detailed_metric: true
        rate_limit:
          unit: MINUTE
          requests_per_unit: 5
          replaces:
            - name: vip
  - key: month
    rate_limit: {unit: month, requests_per_unit: 1}
`

func TestParseEnvoyModel(t *testing.T) {
	p, err := Parse("sms.yaml", []byte(envoySMS))
	if err != nil {
		t.Fatal(err)
	}
	d := p.Domains[0]
	if d.Name != "sms" || d.Override.Algorithm != admit.AlgFixedWindow || d.Override.Store != storeDefault {
		t.Fatalf("domain %+v", d)
	}
	rules := map[string]*Rule{}
	for _, r := range d.Rules {
		rules[r.Name] = r
	}
	var names []string
	for _, r := range d.Rules {
		names = append(names, r.Name)
	}
	wantNames := "sms.campaign_promo.phone sms.phone sms.phone_+15550000000 sms.partner_internal sms.partner_beta sms.path_/v1/* sms.healthcheck sms.region.user_vip sms.plan_gold.user_vip sms.month"
	if strings.Join(names, " ") != wantNames {
		t.Errorf("rules %s\nwant  %s", strings.Join(names, " "), wantNames)
	}
	promo := rules["sms.campaign_promo.phone"]
	if *promo.Rate != (admit.Limit{Rate: 2, Period: time.Hour, Burst: 2}) || promo.Algorithm != admit.AlgFixedWindow || promo.Store != storeDefault ||
		len(promo.Match) != 2 || promo.Match[0] != (Matcher{Key: "campaign", Kind: MatchExact, Value: "promo"}) || promo.Match[1] != (Matcher{Key: "phone"}) {
		t.Errorf("promo: %+v", promo)
	}
	if r := rules["sms.phone_+15550000000"]; r.Rate.Rate != 0 || r.Rate.Validate() != nil {
		t.Errorf("blocked: %+v", r.Rate)
	}
	if r := rules["sms.partner_internal"]; !r.Unlimited || r.Rate != nil {
		t.Errorf("unlimited: %+v", r)
	}
	if r := rules["sms.partner_beta"]; !r.Shadow {
		t.Errorf("shadow: %+v", r)
	}
	if r := rules["sms.path_/v1/*"]; r.Match[0] != (Matcher{Key: "path", Kind: MatchPrefix, Value: "/v1/"}) {
		t.Errorf("wildcard: %+v", r.Match)
	}
	if r := rules["sms.healthcheck"]; !r.Limits.empty() || r.Tiers != nil {
		t.Errorf("whitelist: %+v", r)
	}
	if r := rules["sms.region.user_vip"]; r.Alias != "vip" {
		t.Errorf("alias: %+v", r)
	}
	if r := rules["sms.plan_gold.user_vip"]; len(r.Replaces) != 1 || r.Replaces[0] != "vip" || !r.DetailedMetric || r.Rate.Period != time.Minute {
		t.Errorf("replaces: %+v", r)
	}
	if r := rules["sms.month"]; r.Rate.Period != 30*24*time.Hour {
		t.Errorf("month: %v", r.Rate)
	}
}

func TestEnvoySemantics(t *testing.T) {
	p, err := parseEnvoy("sms.yaml", []byte(envoySMS))
	if err != nil {
		t.Fatal(err)
	}
	clock := admittest.NewManualClock(t0) // noon
	e, err := newEngine(p, clocked(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	phone := desc("phone", "+15551234567")
	promo := desc("campaign", "promo", "phone", "+15551234567")

	// A request with both descriptors must pass both: the promo limit
	// (2/hour) and the phone's (4/day).
	for i := range 2 {
		res := check(t, e, request("sms", promo, phone), nil)
		if !res.Decision.Allowed || res.Statuses[0].Decision.Remaining != int64(1-i) || res.Statuses[1].Decision.Remaining != int64(3-i) {
			t.Fatalf("promo %d: %+v", i, res)
		}
	}
	res := check(t, e, request("sms", promo, phone), nil)
	if res.Decision.Allowed || res.Statuses[0].Code != CodeOverLimit || res.Statuses[1].Code != CodeOK || res.Decision.Rule != "sms.campaign_promo.phone" {
		t.Fatalf("third promo: %+v", res)
	}
	// Envoy's windows are aligned on the epoch: the hour ends at 13:00.
	if res.Statuses[0].Decision.RetryAfter != time.Hour || res.Statuses[0].Decision.ResetAfter != time.Hour {
		t.Errorf("promo window: %+v", res.Statuses[0])
	}
	// The refused request consumed nothing from the phone's limit.
	for i := range 2 {
		res = check(t, e, request("sms", phone), nil)
		if !res.Decision.Allowed || res.Decision.Remaining != int64(1-i) {
			t.Fatalf("phone %d: %+v", i, res.Decision)
		}
	}
	res = check(t, e, request("sms", phone), nil)
	if res.Decision.Allowed || res.Decision.RetryAfter != 12*time.Hour {
		t.Fatalf("phone limit: %+v (want a refusal until midnight UTC)", res.Decision)
	}
	clock.Set(t0.Add(12 * time.Hour))
	if res = check(t, e, request("sms", phone), nil); !res.Decision.Allowed || res.Decision.Remaining != 3 {
		t.Fatalf("next day: %+v", res.Decision)
	}

	// The most specific match: the blocked number matches its own rule,
	// which refuses everything, and not the per-number one.
	res = check(t, e, request("sms", desc("phone", "+15550000000")), nil)
	if res.Decision.Allowed || res.Statuses[0].Rule != "sms.phone_+15550000000" || res.Statuses[0].Decision.Limit.Rate != 0 {
		t.Errorf("blocked number: %+v", res)
	}
	// A descriptor matches only at its own depth.
	for _, d := range []Descriptor{desc("campaign", "promo"), desc("campaign", "promo", "phone", "1", "x", "y"), desc("campaign", "other", "phone", "1"), desc("region", "eu")} {
		if res = check(t, e, request("sms", d), nil); res.Statuses[0].Rule != "" || !res.Decision.Allowed {
			t.Errorf("%v matched %q", d.Entries, res.Statuses[0].Rule)
		}
	}
	// unlimited: OK, never counted.
	res = check(t, e, request("sms", desc("partner", "internal")), nil)
	if st := res.Statuses[0]; !res.Decision.Allowed || !st.Unlimited || st.Decision.Remaining != math.MaxInt64 || st.Code != CodeOK {
		t.Errorf("unlimited: %+v", st)
	}
	// shadow_mode: counted and reported, never refused.
	for i := range 3 {
		res = check(t, e, request("sms", desc("partner", "beta")), nil)
		if !res.Decision.Allowed || res.Statuses[0].Code != CodeOK || res.Statuses[0].WouldRefuse != (i > 0) {
			t.Errorf("shadow %d: %+v", i, res.Statuses[0])
		}
	}
	// A trailing wildcard: one limit per value matching it.
	for i := range 3 {
		check(t, e, request("sms", desc("path", "/v1/users")), nil)
		_ = i
	}
	if res = check(t, e, request("sms", desc("path", "/v1/users")), nil); res.Decision.Allowed {
		t.Errorf("wildcard: %+v", res.Decision)
	}
	if res = check(t, e, request("sms", desc("path", "/v1/orders")), nil); !res.Decision.Allowed || res.Decision.Remaining != 2 {
		t.Errorf("wildcard, another value: %+v", res.Decision)
	}
	if res = check(t, e, request("sms", desc("path", "/v2/users")), nil); res.Statuses[0].Rule != "" {
		t.Errorf("no wildcard match: %+v", res.Statuses[0])
	}
	// A descriptor without rate_limit: whitelisted.
	if res = check(t, e, request("sms", desc("healthcheck", "x")), nil); !res.Decision.Allowed || res.Statuses[0].Rule != "sms.healthcheck" || res.Decision.Limit != admit.Unlimited {
		t.Errorf("whitelist: %+v", res)
	}
	// replaces: with both, the vip limit (1/min) is replaced by gold's
	// 5/min; alone, vip applies.
	vip, gold := desc("region", "eu", "user", "vip"), desc("plan", "gold", "user", "vip")
	for i := range 5 {
		res = check(t, e, request("sms", vip, gold), nil)
		if !res.Decision.Allowed || !res.Statuses[0].Replaced || res.Statuses[1].Decision.Remaining != int64(4-i) {
			t.Fatalf("replaced %d: %+v", i, res)
		}
	}
	if res = check(t, e, request("sms", vip, gold), nil); res.Decision.Allowed {
		t.Errorf("gold's limit: %+v", res.Decision)
	}
	if res = check(t, e, request("sms", vip), nil); !res.Decision.Allowed || res.Decision.Rule != "sms.region.user_vip" {
		t.Errorf("vip alone, never counted while replaced: %+v", res.Decision)
	}
	// An inline limit (Envoy's descriptor limit override) is honoured,
	// and the configured limit ignored.
	l := admit.Limit{Rate: 1, Period: time.Minute, Burst: 1}
	over := desc("phone", "+15550000000")
	over.Limit = &l
	if res = check(t, e, request("sms", over), nil); !res.Decision.Allowed || !res.Statuses[0].Override || res.Statuses[0].Decision.Limit != l {
		t.Errorf("override: %+v", res)
	}
	if res = check(t, e, request("sms", over), nil); res.Decision.Allowed || res.Decision.RetryAfter != time.Minute {
		t.Errorf("override, second: %+v", res.Decision)
	}
}

var envoyBad = []struct {
	name, src string
	want      []string
}{
	{"empty domain", "domain: \"\"\ndescriptors: []\n",
		[]string{`e.yaml:1:9: domain: config file cannot have empty domain`}},
	{"no domain", "descriptors:\n  - key: a\n",
		[]string{`e.yaml:1:1: domain: missing domain`}},
	{"unknown keys", "domain: d\nsettings: {}\ndescriptors:\n  - key: a\n    colour: red\n    rate_limit: {unit: second, requests_per_unit: 1, burst: 2}\n",
		[]string{
			`e.yaml:2:1: settings: unknown field "settings" (want one of domain, descriptors)`,
			`e.yaml:5:5: descriptors[0].colour: unknown field "colour" (want one of key, value, rate_limit, descriptors, shadow_mode, detailed_metric, quota_mode, value_to_metric, share_threshold)`,
			`e.yaml:6:54: descriptors[0].rate_limit.burst: unknown field "burst" (want one of unit, requests_per_unit, unlimited, name, replaces)`,
		}},
	{"empty key, duplicates", "domain: d\ndescriptors:\n  - value: x\n  - key: a\n    value: b\n  - key: a\n    value: b\n  - key: c\n    descriptors:\n      - key: e\n      - key: e\n",
		[]string{
			`e.yaml:3:5: descriptors[0].key: descriptor has empty key`,
			`e.yaml:6:5: descriptors[2]: duplicate descriptor composite key 'd.a_b' (first at line 4)`,
			`e.yaml:11:9: descriptors[3].descriptors[1]: duplicate descriptor composite key 'd.c.e' (first at line 10)`,
		}},
	{"units", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n  - key: b\n    rate_limit: {requests_per_unit: 1}\n  - key: c\n    rate_limit: {unit: second, unlimited: true}\n  - key: f\n    rate_limit: {unit: unknown, requests_per_unit: 1}\n",
		[]string{
			`e.yaml:4:24: descriptors[0].rate_limit.unit: invalid rate limit unit 'fortnight': want second, minute, hour, day, week, month or year`,
			`e.yaml:6:17: descriptors[1].rate_limit: invalid rate limit unit '': want second, minute, hour, day, week, month or year`,
			`e.yaml:8:24: descriptors[2].rate_limit.unit: should not specify rate limit unit when unlimited`,
			`e.yaml:10:24: descriptors[3].rate_limit.unit: invalid rate limit unit 'unknown': want second, minute, hour, day, week, month or year`,
		}},
	{"requests_per_unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: -1}\n  - key: b\n    rate_limit: {unit: second, requests_per_unit: 4294967296}\n  - key: c\n    rate_limit: {unit: second, requests_per_unit: ten}\n",
		[]string{
			`e.yaml:4:51: descriptors[0].rate_limit.requests_per_unit: -1 is negative`,
			`e.yaml:6:51: descriptors[1].rate_limit.requests_per_unit: 4294967296 is too large (the maximum is 4294967295)`,
			`e.yaml:8:51: descriptors[2].rate_limit.requests_per_unit: want a whole number, got the string "ten"`,
		}},
	{"replaces", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {name: x, unit: second, requests_per_unit: 1, replaces: [{name: x}]}\n  - key: b\n    rate_limit: {unit: second, requests_per_unit: 1, replaces: [{}]}\n",
		[]string{
			`e.yaml:4:74: descriptors[0].rate_limit.replaces[0]: replaces should not contain name of same descriptor`,
			`e.yaml:6:65: descriptors[1].rate_limit.replaces[0]: should not have an empty replaces entry`,
		}},
	{"wildcard", "domain: d\ndescriptors:\n  - key: a\n    value: x*y\n    rate_limit: {unit: second, requests_per_unit: 1}\n",
		[]string{`e.yaml:4:12: descriptors[0].value: wildcard "x*y": only a trailing * (a prefix) is supported`}},
	{"types", "domain: [d]\ndescriptors:\n  - key: a\n    shadow_mode: \"yes\"\n    rate_limit: [1]\n  - key: {b: 1}\n",
		[]string{
			`e.yaml:1:9: domain: want a string, got a list`,
			`e.yaml:4:18: descriptors[0].shadow_mode: want true or false, got the string "yes"`,
			`e.yaml:5:17: descriptors[0].rate_limit: want a mapping, got a list`,
			`e.yaml:6:10: descriptors[1].key: want a string, got a mapping`,
			`e.yaml:6:10: descriptors[1].key: descriptor has empty key`,
		}},
}

func TestParseEnvoyBad(t *testing.T) {
	for _, tc := range envoyBad {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parseEnvoy("e.yaml", []byte(tc.src))
			if err == nil || p != nil {
				t.Fatalf("loaded %+v", p)
			}
			if got := err.Error(); got != strings.Join(tc.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", got, strings.Join(tc.want, "\n"))
			}
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Errorf("not ErrInvalidPolicy: %v", err)
			}
		})
	}
	if _, err := parseEnvoy("e.yaml", nil); err == nil || err.Error() != "e.yaml:1: empty file: want domain and descriptors" {
		t.Errorf("empty: %v", err)
	}
}

// TestLoadFiles: several files, of both formats, merged; a domain defined
// twice is reported with both places.
func TestLoadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	sms := write("sms.yaml", envoySMS)
	mongo := write("mongo.yaml", "domain: mongo\ndescriptors:\n  - key: database\n    value: users\n    rate_limit: {unit: second, requests_per_unit: 500}\n")
	api := write("api.yaml", "domain: api\nrules:\n  - {name: a, match: k, rate: 1/s}\n")
	p, err := LoadFiles(sms, mongo, api)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range p.Domains {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "sms,mongo,api" {
		t.Errorf("domains %v", names)
	}
	e, err := newEngine(p, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, dom := range names {
		if !e.HasDomain(dom) {
			t.Errorf("no domain %s", dom)
		}
	}
	dup := write("sms2.yaml", "domain: sms\ndescriptors: []\n")
	bad := write("bad.yaml", "domain: x\ndescriptors:\n  - key: \"\"\n")
	_, err = LoadFiles(sms, dup, bad)
	want := fmt.Sprintf("%s:3:10: descriptors[0].key: descriptor has empty key", bad)
	if err == nil || err.Error() != want {
		t.Errorf("a bad file: %v\nwant %s", err, want)
	}
	_, err = LoadFiles(sms, dup)
	want = fmt.Sprintf("%s:1:9: domain: duplicate domain \"sms\" (first at %s:2:9)", dup, sms)
	if err == nil || err.Error() != want {
		t.Errorf("duplicate domain: %v\nwant %s", err, want)
	}
	if _, err := LoadFiles(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}

	// Merging domains, as envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG.
	more := write("sms-more.yaml", "domain: sms\ndescriptors:\n  - key: carrier\n    rate_limit: {unit: minute, requests_per_unit: 100}\n")
	alone, err := LoadFiles(sms)
	if err != nil {
		t.Fatal(err)
	}
	n := len(alone.Domains[0].Rules)
	p, err = loadMergingDomains(sms, mongo, more)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Domains) != 2 || p.Domains[0].Name != "sms" || len(p.Domains[0].Rules) != n+1 {
		t.Fatalf("merged: %d domains, sms with %d rules", len(p.Domains), len(p.Domains[0].Rules))
	}
	e2, err := newEngine(p, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	var res Result
	if err := e2.Check(context.Background(), &Request{Domain: "sms", Hits: 1, Descriptors: []Descriptor{{Entries: []Entry{{Key: "carrier", Value: "acme"}}}}}, nil, &res); err != nil || res.Statuses[0].Rule == "" {
		t.Errorf("a merged descriptor: %+v, %v", res.Statuses, err)
	}
	// The same descriptor limited in two files is still an error; a file
	// of the other format cannot merge.
	again := write("sms-again.yaml", "domain: sms\ndescriptors:\n  - key: phone\n    rate_limit: {unit: day, requests_per_unit: 9}\n")
	if _, err := loadMergingDomains(sms, again); err == nil || !strings.Contains(err.Error(), again) || !strings.Contains(err.Error(), sms) {
		t.Errorf("a descriptor limited twice: %v", err)
	}
	ours := write("sms-ours.yaml", "domain: sms\nrules:\n  - {name: x, match: k, rate: 1/s}\n")
	want = fmt.Sprintf("%s:1:9: domain: domain \"sms\" cannot merge with its definition at %s:2:9: their format, keys, shadow mode and overrides must agree", ours, sms)
	if _, err := loadMergingDomains(sms, ours); err == nil || err.Error() != want {
		t.Errorf("formats: %v\nwant %s", err, want)
	}
	if len(p.Domains[0].Rules) != n+1 || len(alone.Domains[0].Rules) != n {
		t.Error("merging changed a policy merged before")
	}
}

// FuzzParseEnvoy checks that the Envoy loader never panics, that every
// error it reports names the file and a line, and that what it loads is
// valid and builds an engine.
func FuzzParseEnvoy(f *testing.F) {
	f.Add([]byte(envoySMS))
	for _, tc := range envoyBad {
		f.Add([]byte(tc.src))
	}
	for _, tc := range positionCases {
		f.Add([]byte(tc.src))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseEnvoy("f.yaml", data)
		if err != nil {
			checkPositions(t, err)
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("loaded an invalid policy: %v", err)
		}
		e, err := newEngine(p, Config{})
		if err != nil {
			t.Fatalf("NewEngine: %v", err)
		}
		e.Close()
	})
}

// loadMergingDomains loads each file alone and merges their domains, as
// envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG does.
func loadMergingDomains(paths ...string) (*Policy, error) {
	var ps []*Policy
	for _, path := range paths {
		p, err := LoadFiles(path)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return MergeDomains(ps...)
}
