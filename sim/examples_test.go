package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit/policy"
)

// example reads a worked example of docs/SIMULATE.md, shortened to d (0:
// as it is) so that the tests stay quick.
func example(t *testing.T, dir, traffic string, d time.Duration) (*policy.Policy, *Traffic) {
	t.Helper()
	base := filepath.Join("..", "docs", "simulate", dir)
	p, err := policy.LoadFiles(filepath.Join(base, "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(base, traffic)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := ParseTraffic(path, data)
	if err != nil {
		t.Fatal(err)
	}
	if d > 0 {
		tr.Duration, tr.Step = d, 0
	}
	return p, tr
}

func kinds(ws []Warning) string {
	var ks []string
	for _, w := range ws {
		ks = append(ks, w.Kind)
	}
	return strings.Join(ks, ",")
}

// The worked examples say what they show; these hold them to it.
func TestWorkedExamples(t *testing.T) {
	t.Run("tiers", func(t *testing.T) {
		// The first two minutes: the plans' sum is known by then (the
		// queue's overflows at the standard tier's peak, at 15 to 45
		// minutes, are in the example's pictures).
		p, tr := example(t, "tiers", "traffic.yaml", 2*time.Minute)
		res := mustRun(t, Config{Policy: p, Traffic: tr})
		if !strings.HasPrefix(kinds(res.Warnings), "capacity,burst") || !strings.Contains(res.Warnings[0].Message, "2500 requests/s") {
			t.Errorf("warnings %v", res.Warnings)
		}
	})
	t.Run("retry storm", func(t *testing.T) {
		amp := map[string]float64{}
		for _, name := range []string{"immediate", "no-jitter", "jitter"} {
			p, tr := example(t, "retry-storm", name+".yaml", 2*time.Minute)
			amp[name] = mustRun(t, Config{Policy: p, Traffic: tr}).Amplification
		}
		if !(amp["immediate"] > amp["no-jitter"] && amp["no-jitter"] > amp["jitter"] && amp["jitter"] < 3) {
			t.Errorf("attempts per success: %v", amp)
		}
	})
	t.Run("outage", func(t *testing.T) {
		// Two minutes, Redis down for the second one.
		p, tr := example(t, "outage", "traffic.yaml", 2*time.Minute)
		tr.Faults[0].From, tr.Faults[0].To = time.Minute, 2*time.Minute
		res := mustRun(t, Config{Policy: p, Traffic: tr})
		var outage string
		for _, w := range res.Warnings {
			if w.Kind == "outage" {
				outage = w.Message
			}
		}
		if !strings.Contains(outage, "set local_share: 4") {
			t.Errorf("the outage warning should give the fix: %q (all: %v)", outage, res.Warnings)
		}
	})
}
