package sim

// The fields of a traffic file, as they map onto Traffic's; and the
// durations and rates it writes.

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/admit-go/admit/internal/periodtext"
	"github.com/admit-go/admit/policy"
	"go.yaml.in/yaml/v3"
)

// traffic reads the top level of a traffic file into t.
func (r *reader) traffic(root *yaml.Node, t *Traffic) {
	r.object(root, "", []field{
		{"duration", durationOf(&t.Duration)},
		{"step", durationOf(&t.Step)},
		{"seed", seedOf(&t.Seed)},
		{"headroom", floatOf(&t.Headroom, true)},
		{"instances", intOf(&t.Instances)},
		{"store", wordOf(&t.Store)},
		{"balance", wordOf(&t.Balance)},
		{"backend", backendOf(&t.Backend)},
		{"faults", listOf(&t.Faults, false, faultFields)},
		{"clients", listOf(&t.Clients, false, clientFields)},
	})
}

// listOf sets a list of mappings of fields (a mapping alone is a list of
// one when single is true). Every item has its place in the list, those
// that could not be read too, so that paths count as the file does.
func listOf[T any](p *[]T, single bool, fields func(*T) []field) setter {
	return func(r *reader, n *yaml.Node, path string) bool {
		if n.Kind == yaml.SequenceNode {
			*p = slices.Grow(*p, len(n.Content))
		}
		good := true
		ok := r.items(n, path, single, func(item *yaml.Node, at string) {
			var v T
			if !r.object(item, at, fields(&v)) {
				good = false
			}
			*p = append(*p, v)
		})
		return ok && good
	}
}

func faultFields(f *Fault) []field {
	return []field{
		{"store", lowerOf(&f.Store)},
		{"from", durationOf(&f.From)},
		{"to", durationOf(&f.To)},
	}
}

// backendOf sets the backend.
func backendOf(p **Backend) setter {
	return func(r *reader, n *yaml.Node, path string) bool {
		b := &Backend{}
		*p = b
		return r.object(n, path, []field{
			{"concurrency", intOf(&b.Concurrency)},
			{"service", durationOf(&b.Service)},
			{"distribution", wordOf(&b.Distribution)},
			{"spread", durationOf(&b.Spread)},
			{"queue", intOf(&b.Queue)},
			{"timeout", durationOf(&b.Timeout)},
		})
	}
}

func clientFields(c *Client) []field {
	return []field{
		{"name", textOf(&c.Name)},
		{"count", intOf(&c.Count)},
		{"domain", textOf(&c.Domain)},
		{"descriptors", descriptorsOf(&c.Descriptors)},
		{"hits", int64Of(&c.Hits)},
		{"start", durationOf(&c.Start)},
		{"stop", durationOf(&c.Stop)},
		{"arrival", arrivalOf(&c.Arrival)},
		{"retry", retryOf(&c.Retry)},
	}
}

// arrivalOf sets an arrival process; the fields of a replay (log,
// format, time, key) sit beside the others.
func arrivalOf(a *Arrival) setter {
	return func(r *reader, n *yaml.Node, path string) bool {
		var log Replay
		var named, given bool
		replay := func(s setter) setter {
			return func(r *reader, n *yaml.Node, path string) bool {
				given = true
				return s(r, n, path)
			}
		}
		ok := r.object(n, path, []field{
			{"process", wordOf(&a.Process)},
			{"rate", rateOf(&a.Rate)},
			{"peak", rateOf(&a.Peak)},
			{"period", durationOf(&a.Period)},
			{"on", durationOf(&a.On)},
			{"off", durationOf(&a.Off)},
			{"log", replay(func(r *reader, n *yaml.Node, path string) bool {
				named = true
				return r.logOf(&log, n, path)
			})},
			{"format", replay(wordOf(&log.Format))},
			{"time", replay(textOf(&log.Time))},
			{"key", replay(textOf(&log.Key))},
		})
		if given {
			if log.Format == "clf" { // the key is a word, not a CSV column's name
				log.Key = strings.ToLower(strings.TrimSpace(log.Key))
			}
			a.Log = &log
		}
		if ok && given && !named && a.Process == "replay" {
			r.failf(n, child(path, "log"), "missing: the access log to replay (a path, relative to this file)")
		}
		return ok
	}
}

// logOf reads the access log named at n into l.
func (r *reader) logOf(l *Replay, n *yaml.Node, path string) bool {
	s, ok := r.scalar(n, path, "a path")
	if !ok {
		return false
	}
	if s.Value == "" {
		r.failf(n, path, "must not be empty")
		return false
	}
	name, data, err := r.logFile(s.Value)
	if err != nil {
		r.failf(n, path, "%v", err)
		return false
	}
	l.Name, l.Data = name, data
	return true
}

func retryOf(p *Retry) setter {
	return func(r *reader, n *yaml.Node, path string) bool {
		return r.object(n, path, []field{
			{"on_429", wordOf(&p.On429)},
			{"delay", durationOf(&p.Delay)},
			{"jitter", floatOf(&p.Jitter, false)},
			{"budget", floatOf(&p.Budget, false)},
			{"max_attempts", intOf(&p.MaxAttempts)},
		})
	}
}

// descriptorsOf sets a list of descriptors, each a mapping whose keys
// and values are its entries, in order (a mapping alone is a list of
// one).
func descriptorsOf(p *[]policy.Descriptor) setter {
	return func(r *reader, n *yaml.Node, path string) bool {
		good := true
		ok := r.items(n, path, true, func(item *yaml.Node, at string) {
			var d policy.Descriptor
			m := r.follow(item, at)
			switch {
			case m == nil:
				good = false
			case m.Kind != yaml.MappingNode:
				r.failf(item, at, "want a mapping of entries (tenant: acme), got %s", describe(m))
				good = false
			default:
				r.within(m, func() {
					r.pairs(m, at, func(key string, _, v *yaml.Node, kat string) {
						r.note(kat, v)
						var value string
						good = textOf(&value)(r, v, kat) && good
						d.Entries = append(d.Entries, policy.Entry{Key: key, Value: value})
					})
				})
			}
			*p = append(*p, d)
		})
		return ok && good
	}
}

// durationText is a duration's text: whole days, then a Go duration.
var durationText = regexp.MustCompile(`^([0-9]+d)?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))*$`)

// parseDuration parses a duration as a traffic file writes it: a Go
// duration (500ms, 1h30m) after optional whole days (7d, 1d12h), or 0.
// The error says what is wrong, without the field's name.
func parseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimPrefix(strings.TrimPrefix(t, "+"), "-")
	switch {
	case t == "0":
		return 0, nil
	case t == "" || !durationText.MatchString(t):
		switch strings.ToLower(strings.TrimLeft(t, "0123456789. ")) {
		case "y", "yr", "yrs", "year", "years", "w", "wk", "week", "weeks", "mo", "month", "months":
			return 0, fmt.Errorf("want a duration (10s, 5m, 1h, 2d), got %s: the units go up to d (days); a run lasts at most a year (365d)", quote(s))
		}
		return 0, fmt.Errorf("want a duration (10s, 5m, 1h, 2d), got %s", quote(s))
	}
	var days time.Duration
	if i := strings.IndexByte(t, 'd'); i >= 0 {
		n, err := strconv.ParseInt(t[:i], 10, 64)
		if err != nil || n > int64(math.MaxInt64/(24*time.Hour)) {
			return 0, fmt.Errorf("%s is too long for a duration", quote(s))
		}
		days, t = time.Duration(n)*24*time.Hour, t[i+1:]
	}
	var rest time.Duration
	if t != "" {
		var err error
		if rest, err = time.ParseDuration(t); err != nil || rest > math.MaxInt64-days {
			return 0, fmt.Errorf("%s is too long for a duration", quote(s))
		}
	}
	if neg && days+rest != 0 {
		return 0, fmt.Errorf("%s is negative", quote(s))
	}
	return days + rest, nil
}

// parseRate parses a rate in requests per second: a number, or a number
// of requests per period (2/s, 100/min, 5000/h, 30/5m; the periods of
// policy files).
func parseRate(s string) (float64, error) {
	num, per, slash := strings.Cut(strings.TrimSpace(s), "/")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("want a rate (2/s, 100/min, 5000/h, or a number per second), got %s", quote(s))
	}
	if !slash {
		return v, nil
	}
	d, err := periodtext.Parse(strings.TrimSpace(per))
	if err != nil {
		return 0, fmt.Errorf("rate %s: %v", quote(s), err)
	}
	return v / d.Seconds(), nil
}
