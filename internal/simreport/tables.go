package simreport

import (
	"fmt"
	"sort"

	"github.com/admit-go/admit/sim"
)

// column is one count of a Tally in a table: its heading in the HTML
// report and the terminal, its name in CSV, and how to read it.
type column struct {
	head, csv string
	get       func(sim.Tally) int64
}

// The columns of the tables. A rule is asked about attempts and answers
// admitted or denied; what clients did next (gave up, succeeded, failed)
// is theirs, and the ideal and bounds are the rules'.
var (
	colRequests  = column{"Requests", "requests", func(t sim.Tally) int64 { return t.Requests }}
	colAttempts  = column{"Attempts", "attempts", func(t sim.Tally) int64 { return t.Attempts }}
	colAdmitted  = column{"Admitted", "admitted", func(t sim.Tally) int64 { return t.Admitted }}
	colDenied    = column{"Denied", "denied", func(t sim.Tally) int64 { return t.Denied }}
	colGaveUp    = column{"Gave up", "gave_up", func(t sim.Tally) int64 { return t.GaveUp }}
	colSucceeded = column{"Succeeded", "succeeded", func(t sim.Tally) int64 { return t.Succeeded }}
	colFailed    = column{"Failed", "failed", func(t sim.Tally) int64 { return t.Failed }}
	colIdeal     = column{"Ideal", "ideal", func(t sim.Tally) int64 { return t.Ideal }}
	colOver      = column{"Over", "over", func(t sim.Tally) int64 { return t.Over }}
	colUnder     = column{"Under", "under", func(t sim.Tally) int64 { return t.Under }}
	colBound     = column{"Bound/key", "bound", func(t sim.Tally) int64 { return t.Bound }}
	colOverBound = column{"Over bound", "over_bound", func(t sim.Tally) int64 { return t.OverBound }}

	clientColumns = []column{colRequests, colAttempts, colAdmitted, colDenied, colGaveUp, colSucceeded, colFailed}
	ruleColumns   = []column{colRequests, colAdmitted, colDenied, colIdeal, colOver, colUnder, colBound, colOverBound}
	allColumns    = append(append([]column(nil), clientColumns...), colIdeal, colOver, colUnder, colBound, colOverBound)
)

// table is a Tally table of a run: clients, tenants or rules.
type table struct {
	kind    string // "client", "tenant", "rule": the CSV's kind and the first heading
	caption string
	note    string // what was left out, or ""
	columns []column
	rows    []sim.Tally
	total   *sim.Tally // a last row of totals, or nil
}

// maxTenants is how many tenants a report's table lists, the most denied
// first.
const maxTenants = 50

// tables is the run's tables: its clients (with the total), its tenants
// when they are not simply its clients (at most max, the most denied
// first), and its rules.
func tables(r *sim.Result, max int) []table {
	total := r.Total
	out := []table{{kind: "client", caption: "Clients", columns: clientColumns, rows: r.Clients, total: &total}}
	if len(r.Tenants) > 0 && !sameNames(r.Tenants, r.Clients) {
		ts := topDenied(r.Tenants, max)
		t := table{kind: "tenant", caption: "Tenants", columns: clientColumns, rows: ts}
		if len(ts) < len(r.Tenants) {
			t.note = fmt.Sprintf("the %d most denied of %s tenants", len(ts), count(int64(len(r.Tenants))))
		}
		out = append(out, t)
	}
	if len(r.Rules) > 0 {
		out = append(out, table{kind: "rule", caption: "Rules", columns: ruleColumns, rows: r.Rules})
	}
	return out
}

// sameNames reports whether a and b name the same tallies, in order (as
// the tenants of clients whose Count is 1 are the clients themselves).
func sameNames(a, b []sim.Tally) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return false
		}
	}
	return true
}

// topDenied is the n tallies of ts with the most denials, in that order
// (ties in ts's order); ts is not changed.
func topDenied(ts []sim.Tally, n int) []sim.Tally {
	out := append([]sim.Tally(nil), ts...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Denied > out[j].Denied })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// stat is a headline figure of a run: its name, its value, and what it
// means or is made of.
type stat struct {
	name, value, note string
	warn              bool // the value calls for attention
}

// stats is the run's headline figures: admissions, retry amplification,
// fairness and, with a backend, its latency, queue, capacity and
// Little's law.
func stats(r *sim.Result) []stat {
	t := r.Total
	out := []stat{{
		name: "Admitted", value: share(t.Admitted, t.Attempts),
		note: fmt.Sprintf("%s of %s attempts; %s denied", count(t.Admitted), count(t.Attempts), count(t.Denied)),
	}, {
		name: "Retry amplification", value: figure3(r.Amplification) + "×",
		note: "attempts per successful request", warn: r.Amplification >= 2,
	}}
	if len(r.Tenants) > 0 {
		out = append(out, stat{name: "Fairness (Jain's index)", value: figure3(r.Fairness),
			note: fmt.Sprintf("over %s tenants: 1 when each gets the same share of what it asks",
				count(int64(len(r.Tenants)))), warn: r.Fairness < 0.8})
	}
	if !hasBackend(r) {
		return out
	}
	return append(out, stat{
		name: "Backend latency", value: "p99 " + duration(r.LatencyP99),
		note: "p50 " + duration(r.LatencyP50) + ", from admission to response",
	}, stat{
		name: "Backend queue", value: "p99 " + figure3(r.QueueP99),
		note: "p50 " + figure3(r.QueueP50) + " requests waiting, weighted by time",
	}, stat{
		name: "Backend capacity", value: figure3(r.Capacity) + "/s",
		note: "requests per second at full use (workers / service time)",
	}, stat{
		name: "Little's law", value: "error " + percent(r.LittleError),
		note: fmt.Sprintf("L = %s in the backend; λW = %s/s × %s = %s", figure3(r.L), figure3(r.Lambda),
			duration(secondsDuration(r.W)), figure3(r.Lambda*r.W)),
		warn: r.LittleError > 0.02,
	})
}

// share formats part/whole as a percentage ("—" when whole is 0).
func share(part, whole int64) string {
	if whole == 0 {
		return "—"
	}
	return percent(float64(part) / float64(whole))
}

// hasBackend reports whether the run had a backend (its capacity, or its
// queue's series, tell).
func hasBackend(r *sim.Result) bool {
	return r.Capacity > 0 || hasSeries(r, "queue")
}
