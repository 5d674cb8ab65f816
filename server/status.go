package server

// The status page (/status, /status.json; internal/status) and the
// metrics of the engine's layers.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/enginehook"
	"github.com/admit-go/admit/internal/status"
	"github.com/admit-go/admit/policy"
	"github.com/prometheus/client_golang/prometheus"
)

// observer returns the Observer the engine and the store report to: the
// status page's Recorder, which passes every event on to the promlimit
// Observer, or that Observer alone with NoStatus.
func (s *Server) observer() admit.Observer {
	if s.rec != nil {
		return s.rec
	}
	return s.obs
}

// buildStatus makes the status page's Recorder (unless NoStatus) and
// registers the metrics of the layers and the build.
func (s *Server) buildStatus() error {
	if !s.c.NoStatus {
		s.rec = status.NewRecorder(s.obs, nil)
	}
	if err := s.reg.Register(&layerMetrics{engine: s.engines.Engine, rec: s.rec}); err != nil {
		return fmt.Errorf("%w: metrics: %v", errInvalidConfig, err)
	}
	return nil
}

// withStatus serves the status page's paths of h's listener: with page,
// or, without one (NoStatus, or a listener that is not the admin one),
// 404.
func withStatus(h http.Handler, page *status.Page) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(status.Paths, r.URL.Path) {
			if page == nil {
				http.NotFound(w, r)
				return
			}
			page.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// statusPage returns the status page for the admin handler, nil with
// NoStatus. Without an admin listener of its own (Config.AdminAddr), the
// admin handler is the HTTP listener's, and the page answers loopback
// clients only.
func (s *Server) statusPage() *status.Page {
	if s.rec == nil {
		return nil
	}
	host, _ := os.Hostname()
	inst := status.Instance{Hostname: host, PID: os.Getpid(), Version: buildVersion(), GoVersion: runtime.Version(), Started: s.started}
	return &status.Page{
		Recorder:     s.rec,
		Engine:       func() any { return s.engines.Engine() },
		LoopbackOnly: s.c.AdminAddr == "",
		Info: func() (status.Instance, status.Policy, string) {
			store := "memory"
			if s.store != nil {
				store = "redis"
			}
			return inst, s.policyInfo(), store
		},
	}
}

// policyInfo describes the policy in force for the status page.
func (s *Server) policyInfo() status.Policy {
	t := s.text.Load()
	p := status.Policy{Source: "built-in", Files: []string{}, LoadedAt: t.at}
	switch {
	case len(s.c.PolicyFiles) > 0:
		p.Source = "files"
	case s.c.Policy != nil:
		p.Source = "go"
	}
	if len(t.data) > 0 {
		h := sha256.New()
		for _, d := range t.data {
			h.Write(d)
		}
		p.SHA256 = hex.EncodeToString(h.Sum(nil))
		p.Files = append(p.Files, t.files...)
	}
	if r := s.cfg.last.Load(); r != nil {
		p.LastReload = *r
	}
	return p
}

// buildVersion is the module's version as built ("(devel)" from a work
// tree).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(unknown)"
}

// layerMetrics is the collector of the state of the engine's layers and
// of the build, read at each scrape (labels: the layer's rule, as in
// Decision.Rule; never a key):
//
//	admit_build_info{version,go_version}        gauge (1)
//	admit_layer_in_flight{rule}                 gauge (slots held: concurrency kept in memory, adaptive concurrency, lanes; this instance's of concurrency kept in Redis)
//	admit_layer_waiting{rule}                   gauge (callers waiting for slots)
//	admit_adaptive_limit{rule,stat}             gauge (min, median, max over the layer's keys: events/s or slots; floor: the layer's Min)
//	admit_adaptive_keys{rule}                   gauge (keys with an adaptive limit of their own)
//	admit_remaining_ratio{rule}                 histogram (capacity left after each decision, as a share of the burst)
type layerMetrics struct {
	engine func() *policy.Engine
	rec    *status.Recorder
}

var (
	buildInfoDesc = prometheus.NewDesc("admit_build_info", "1, labelled with the version of admit serve and the Go version it was built with.", []string{"version", "go_version"}, nil)
	inFlightDesc  = prometheus.NewDesc("admit_layer_in_flight", "Slots held now at a concurrency layer, over all its keys: kept in memory (caps, adaptive, lanes), all of them; kept in Redis, this instance's (granted through it, and neither released nor past their lease).", []string{"rule"}, nil)
	waitingDesc   = prometheus.NewDesc("admit_layer_waiting", "Callers waiting now for the slots of a concurrency layer, over all its keys.", []string{"rule"}, nil)
	adaptiveDesc  = prometheus.NewDesc("admit_adaptive_limit", "The current limits of an adaptive layer's keys (events per second for adaptive_rate, slots for adaptive_concurrency): their min, median and max, and the floor they may not go below (stat=\"floor\").", []string{"rule", "stat"}, nil)
	adaptKeysDesc = prometheus.NewDesc("admit_adaptive_keys", "Keys with an adaptive limit of their own at a layer.", []string{"rule"}, nil)
	remainingDesc = prometheus.NewDesc("admit_remaining_ratio", "The capacity a layer had left after each of its decisions, as a share of its burst (0: none left).", []string{"rule"}, nil)
)

func (m *layerMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{buildInfoDesc, inFlightDesc, waitingDesc, adaptiveDesc, adaptKeysDesc, remainingDesc} {
		ch <- d
	}
}

func (m *layerMetrics) Collect(ch chan<- prometheus.Metric) {
	send := func(d *prometheus.Desc, v float64, labels ...string) {
		if mt, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, v, labels...); err == nil {
			ch <- mt
		}
	}
	send(buildInfoDesc, 1, buildVersion(), runtime.Version())
	if e := m.engine(); e != nil && enginehook.Layers != nil {
		seen := map[string]bool{}
		enginehook.Layers(e, func(l *enginehook.Layer) {
			label := strings.ToValidUTF8(l.Label, "\uFFFD")
			if seen[label] {
				return
			}
			seen[label] = true
			if l.Slots {
				send(inFlightDesc, float64(l.InFlight), label)
				send(waitingDesc, float64(l.Waiting), label)
			}
			if l.Current.N > 0 {
				send(adaptiveDesc, l.Current.Min, label, "min")
				send(adaptiveDesc, l.Current.Median, label, "median")
				send(adaptiveDesc, l.Current.Max, label, "max")
				send(adaptiveDesc, l.Floor, label, "floor")
				send(adaptKeysDesc, float64(l.Keys), label)
			}
		})
	}
	if m.rec != nil {
		m.rec.Remaining(func(rule string, cum []uint64, sum float64) {
			buckets := make(map[float64]uint64, len(status.RemainingBounds))
			for i, b := range status.RemainingBounds {
				buckets[b] = cum[i]
			}
			if mt, err := prometheus.NewConstHistogram(remainingDesc, cum[len(cum)-1], sum, buckets, strings.ToValidUTF8(rule, "\uFFFD")); err == nil {
				ch <- mt
			}
		})
	}
}
