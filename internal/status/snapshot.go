package status

import (
	"sort"
	"strconv"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/enginehook"
)

// Snapshot is the document /status.json serves (docs/API.md describes
// it). Every string that comes from a policy or a request (rule names,
// keys, file names, errors) is made displayable (see display).
type Snapshot struct {
	Version    int         `json:"version"` // of this format: 1
	Time       time.Time   `json:"time"`
	Instance   Instance    `json:"instance"`
	Policy     Policy      `json:"policy"`
	Rules      []Rule      `json:"rules"`
	DeniedKeys DeniedKeys  `json:"denied_keys"`
	Store      StoreHealth `json:"store"`
}

// Instance says which instance answers.
type Instance struct {
	Hostname      string    `json:"hostname"`
	PID           int       `json:"pid"`
	Version       string    `json:"version"`
	GoVersion     string    `json:"go_version"`
	Started       time.Time `json:"started"`
	UptimeSeconds float64   `json:"uptime_seconds"`
}

// Policy is the policy in force and the last load's result.
type Policy struct {
	Source   string    `json:"source"` // files, go or built-in
	Files    []string  `json:"files"`
	SHA256   string    `json:"sha256,omitempty"`
	LoadedAt time.Time `json:"loaded_at"`
	// LastReload is the latest load's result (at start or a reload).
	LastReload Reload `json:"last_reload"`
}

// Reload is the result of a policy load.
type Reload struct {
	At    time.Time `json:"at"`
	OK    bool      `json:"ok"`
	Error string    `json:"error,omitempty"`
}

// Rule is what happened lately at one layer of the engine (its label as
// in Decision.Rule) and its state now.
type Rule struct {
	Rule        string  `json:"rule"`
	Kind        string  `json:"kind,omitempty"`
	Shared      bool    `json:"shared,omitempty"`
	Limit       string  `json:"limit,omitempty"`
	PerSecond   float64 `json:"decisions_per_second"` // over the last 10 s
	DeniedShare float64 `json:"denied_share"`         // over the last 60 s
	// Allowed and Denied are the decisions of the last 5 minutes by
	// 5-second step, oldest first (SparkPoints points).
	Allowed  []uint64  `json:"allowed"`
	Denied   []uint64  `json:"denied"`
	InFlight *int64    `json:"in_flight,omitempty"`
	Waiting  *int64    `json:"waiting,omitempty"`
	Adaptive *Adaptive `json:"adaptive,omitempty"`
	Fallback *bool     `json:"fallback,omitempty"` // nil: no failure policy
}

// Adaptive summarizes the current limits of an adaptive layer's keys.
type Adaptive struct {
	Keys   int     `json:"keys"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
	Unit   string  `json:"unit"` // per_second or slots
}

// DeniedKeys are the keys denied most often since the start.
type DeniedKeys struct {
	Counters int         `json:"counters"` // the sketch's size
	Total    uint64      `json:"total"`    // denials counted
	Top      []DeniedKey `json:"top"`
}

// StoreHealth is the shared store's health over the last 60 s.
type StoreHealth struct {
	Kind           string   `json:"kind"` // memory or redis
	CallsPerSecond float64  `json:"calls_per_second"`
	Errors         uint64   `json:"errors"`
	MeanLatencyMS  float64  `json:"mean_latency_ms"`
	Guarded        int      `json:"guarded_rules"`
	OnFallback     []string `json:"on_fallback"`
}

// SparkPoints is the number of points of a sparkline, and SparkStep the
// seconds each stands for.
const (
	SparkPoints = 60
	SparkStep   = Window / SparkPoints
)

// TopShown is how many denied keys a Snapshot lists.
const TopShown = 20

// Snapshot returns the state of the Recorder and of engine (a
// *policy.Engine, read through enginehook), with the instance's and the
// policy's info.
func (r *Recorder) Snapshot(engine any, inst Instance, pol Policy, storeKind string) *Snapshot {
	now := r.now()
	sec := now.Unix() - 1 // the last whole second
	inst.UptimeSeconds = now.Sub(inst.Started).Seconds()
	inst.Hostname = display([]byte(inst.Hostname))
	files := make([]string, len(pol.Files))
	for i, f := range pol.Files {
		files[i] = display([]byte(f))
	}
	pol.Files = files
	pol.LastReload.Error = display([]byte(pol.LastReload.Error))
	s := &Snapshot{Version: 1, Time: now, Instance: inst, Policy: pol, Store: StoreHealth{Kind: storeKind, OnFallback: []string{}}}
	rows := map[string]*Rule{}
	var buf [Window]uint64
	for name, rs := range *r.rules.Load() {
		row := &Rule{Rule: display([]byte(name))}
		rs.s.read(sec, 0, &buf)
		row.Allowed = spark(&buf)
		allowed10, allowed60 := tail(&buf, 10), tail(&buf, 60)
		rs.s.read(sec, 1, &buf)
		row.Denied = spark(&buf)
		denied10, denied60 := tail(&buf, 10), tail(&buf, 60)
		row.PerSecond = float64(allowed10+denied10) / 10
		if n := allowed60 + denied60; n > 0 {
			row.DeniedShare = float64(denied60) / float64(n)
		}
		rows[name] = row
	}
	if enginehook.Layers != nil && engine != nil {
		enginehook.Layers(engine, func(l *enginehook.Layer) { layerRow(rows, l, &s.Store) })
	}
	s.Rules = make([]Rule, 0, len(rows))
	for _, row := range rows {
		s.Rules = append(s.Rules, *row)
	}
	sort.Slice(s.Rules, func(i, j int) bool { return s.Rules[i].Rule < s.Rules[j].Rule })
	sort.Strings(s.Store.OnFallback)
	s.DeniedKeys.Counters = TopKeys
	s.DeniedKeys.Top, s.DeniedKeys.Total = r.keys.top(TopShown)
	r.store.read(sec, 0, &buf)
	calls := tail(&buf, 60)
	r.store.read(sec, 1, &buf)
	s.Store.Errors = tail(&buf, 60)
	r.store.read(sec, 2, &buf)
	s.Store.CallsPerSecond = float64(calls) / 60
	if calls > 0 {
		s.Store.MeanLatencyMS = float64(tail(&buf, 60)) / float64(calls) / 1e6
	}
	return s
}

// layerRow adds what layer l tells to its row (made if the layer decided
// nothing yet) and to the store's health.
func layerRow(rows map[string]*Rule, l *enginehook.Layer, st *StoreHealth) {
	row := rows[l.Label]
	if row == nil {
		row = &Rule{Rule: display([]byte(l.Label)), Allowed: make([]uint64, SparkPoints), Denied: make([]uint64, SparkPoints)}
		rows[l.Label] = row
	}
	row.Kind, row.Shared, row.Limit = l.Kind, l.Shared, limitText(l)
	if l.Slots {
		in, w := l.InFlight, l.Waiting
		row.InFlight, row.Waiting = &in, &w
	}
	if l.Current.N > 0 {
		unit := "slots"
		if l.Kind == "adaptive_rate" {
			unit = "per_second"
		}
		row.Adaptive = &Adaptive{Keys: l.Keys, Min: l.Current.Min, Median: l.Current.Median, Max: l.Current.Max, Unit: unit}
	}
	if l.Guarded {
		fb := l.Fallback
		row.Fallback = &fb
		st.Guarded++
		if fb {
			st.OnFallback = append(st.OnFallback, row.Rule)
		}
	}
}

// limitText is l's configured limit as text: "10/s burst 20", "10 in
// flight", or the text the engine gives (a quota's: "1000/day
// (Europe/Paris)").
func limitText(l *enginehook.Layer) string {
	if l.Text != "" {
		return l.Text
	}
	if l.Kind == "concurrency" || l.Kind == "adaptive_concurrency" || l.Kind == "lanes_concurrency" {
		return strconv.FormatInt(l.Rate, 10) + " in flight"
	}
	if l.PeriodNanos <= 0 {
		return ""
	}
	return admit.Limit{Rate: l.Rate, Period: time.Duration(l.PeriodNanos), Burst: l.Burst}.String()
}

// spark sums the seconds of buf by SparkStep.
func spark(buf *[Window]uint64) []uint64 {
	out := make([]uint64, SparkPoints)
	for i, v := range buf {
		out[i/SparkStep] += v
	}
	return out
}

// tail sums the last n seconds of buf.
func tail(buf *[Window]uint64, n int) uint64 {
	var t uint64
	for _, v := range buf[Window-n:] {
		t += v
	}
	return t
}
