package server

import (
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit/internal/status"

	"github.com/admit-go/admit/policy"
	"github.com/prometheus/client_golang/prometheus"
)

// configMetrics are the Server's metrics of policy reloads:
//
//	admit_config_reloads_total{result="success"|"failure"}  counter
//	admit_config_last_reload_successful                     gauge (0 or 1)
//	admit_config_last_reload_success_timestamp_seconds      gauge (Unix time)
type configMetrics struct {
	success, failure prometheus.Counter
	lastOK           prometheus.Gauge
	lastSuccess      prometheus.Gauge
	last             atomic.Pointer[status.Reload] // the latest load's result
}

func newConfigMetrics(reg prometheus.Registerer) (*configMetrics, error) {
	reloads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "admit", Subsystem: "config", Name: "reloads_total",
		Help: "Policy reloads (on SIGHUP, on a change of the files, or on Reload), by result; a failed one kept the policy in force.",
	}, []string{"result"})
	m := &configMetrics{
		success: reloads.WithLabelValues("success"),
		failure: reloads.WithLabelValues("failure"),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "admit", Subsystem: "config", Name: "last_reload_successful",
			Help: "1 if the latest policy load (at start or a reload) succeeded, 0 if it failed and an older policy is in force.",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "admit", Subsystem: "config", Name: "last_reload_success_timestamp_seconds",
			Help: "Unix time of the latest successful policy load (at start or a reload).",
		}),
	}
	for _, c := range []prometheus.Collector{reloads, m.lastOK, m.lastSuccess} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *configMetrics) loaded(now time.Time, reload bool) {
	if reload {
		m.success.Inc()
	}
	m.lastOK.Set(1)
	m.lastSuccess.Set(float64(now.UnixNano()) / 1e9)
	m.last.Store(&status.Reload{At: now, OK: true})
}

func (m *configMetrics) failed(err error) {
	m.failure.Inc()
	m.lastOK.Set(0)
	m.last.Store(&status.Reload{At: time.Now(), Error: err.Error()})
}

// Reload loads the policy files again and, if they are valid, makes the
// new policy decide every request from now on (requests being decided
// finish with the policy they started with). The limits whose definition
// did not change keep their state (policy.Config.Previous). If the files are
// invalid (garbage, a file deleted or half written, a gateway domain the
// new policy lacks), the policy in force stays, the problems are logged
// (each with its file, line and column), admit_config_reloads_total
// {result="failure"} counts it, and Reload returns the problems. Reload is
// what SIGHUP does; it reloads even if the files did not change. With a
// policy not from files (WithPolicy, the built-in policy), it does
// nothing and returns nil. It is safe to call at any time from any
// goroutine; reloads are serialized.
func (s *Server) Reload() error {
	if s.isClosed() {
		return errClosed
	}
	if len(s.c.PolicyFiles) == 0 {
		s.log.Info("reload: the policy is not from files; nothing to reload")
		return nil
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	s.stats = statFiles(s.c.PolicyFiles)
	return s.apply(readSnapshot(s.c.PolicyFiles), "reload")
}

// poll is the goroutine that looks at the policy files every interval.
func (s *Server) poll(interval time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
			s.pollOnce()
		}
	}
}

// pollOnce reloads the policy files if they changed since the last look:
// their sizes or modification times first, then their content. A change
// is tried once: files that stay invalid are not reported again until
// they change again.
func (s *Server) pollOnce() {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	stats := statFiles(s.c.PolicyFiles)
	if sameStats(stats, s.stats) {
		return
	}
	s.stats = stats
	snap := readSnapshot(s.c.PolicyFiles)
	if snap.hash == s.hash {
		return
	}
	_ = s.apply(snap, "file change")
}

// apply makes the policy of snap the one in force, if it is valid. The
// caller holds reloadMu.
func (s *Server) apply(snap *snapshot, why string) error {
	s.hash = snap.hash
	err := s.swap(snap)
	if err != nil {
		s.cfg.failed(err)
		s.logLoadError("reload failed; the policy in force stays", why, err)
		return err
	}
	s.cfg.loaded(time.Now(), true)
	return nil
}

// swap builds the engine of snap's policy and puts it in force.
func (s *Server) swap(snap *snapshot) error {
	p, err := snap.parse(s.c.MergeDomains)
	if err != nil {
		return err
	}
	old := s.engines.Engine()
	e, err := s.newEngine(p, old)
	if err != nil {
		return err
	}
	if s.gw != nil {
		if err := s.gw.SetEngine(e); err != nil {
			return policy.Errors{{Msg: "the gateway's domain " + quote(s.gw.domain) + " is not in the new policy"}}
		}
	}
	s.engines.Set(e)
	s.pol.Store(p)
	s.text.Store(&policyText{files: snap.files, data: snap.data, at: time.Now()})
	domains, rules := policySummary(p)
	s.log.Info("policy reloaded", "files", snap.files, "domains", domains, "rules", rules)
	return nil
}

// maxLoggedProblems bounds the problems a failed load logs one by one.
const maxLoggedProblems = 20

// logLoadError logs the problems of a policy that could not be loaded,
// one record per problem, each with its position.
func (s *Server) logLoadError(msg, why string, err error) {
	var es policy.Errors
	if errors.As(err, &es) {
		s.log.Error(msg, "trigger", why, "problems", len(es))
		for i, e := range es {
			if i == maxLoggedProblems {
				s.log.Error("policy problem", "more", len(es)-i)
				break
			}
			s.log.Error("policy problem", "pos", policy.Pos{File: e.File, Line: e.Line, Column: e.Column}.String(),
				"field", e.Field, "problem", e.Msg)
		}
		return
	}
	lines := strings.Split(err.Error(), "\n")
	s.log.Error(msg, "trigger", why, "problems", len(lines))
	for i, l := range lines {
		if i == maxLoggedProblems {
			s.log.Error("policy problem", "more", len(lines)-i)
			break
		}
		s.log.Error("policy problem", "problem", l)
	}
}

func quote(s string) string { return `"` + s + `"` }
