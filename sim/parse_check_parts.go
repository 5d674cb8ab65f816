package sim

// The domains of a client's arrival process and retries, of the backend
// and of the faults.

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// arrival checks an arrival process: the fields its process reads, and
// none of the others.
func (c *checker) arrival(path string, a *Arrival) {
	if !c.oneOf(path+".process", a.Process, "poisson", "constant", "on_off", "diurnal", "replay") {
		return
	}
	process := a.Process
	if process == "" {
		process = "poisson"
	}
	// only reports a field set that its process does not read.
	only := func(field string, set bool, whose string) {
		if set {
			c.add(path+"."+field, "only %s has %s (process is %s)", whose, field, process)
		}
	}
	if process == "replay" {
		only("rate", a.Rate != 0, "a process other than replay (whose requests come at the log's times)")
	} else {
		c.rate(path+".rate", a.Rate)
	}
	if process == "diurnal" {
		c.rate(path+".peak", a.Peak)
		if a.Peak > 0 && a.Peak < a.Rate {
			c.add(path+".peak", "%g per second is below rate (%g per second)", a.Peak, a.Rate)
		}
		c.span(path+".period", a.Period)
	} else {
		only("peak", a.Peak != 0, "diurnal")
		only("period", a.Period != 0, "diurnal")
	}
	if process == "on_off" {
		for _, f := range []struct {
			name string
			d    time.Duration
		}{{"on", a.On}, {"off", a.Off}} {
			if c.span(path+"."+f.name, f.d) && f.d == 0 {
				c.add(path+"."+f.name, "required: how long each phase lasts (10s)")
			}
		}
	} else {
		only("on", a.On != 0, "on_off")
		only("off", a.Off != 0, "on_off")
	}
	switch {
	case process != "replay":
		only("log", a.Log != nil, "replay")
	case a.Log == nil:
		c.add(path+".log", "required: the access log to replay")
	default:
		c.replay(path, a.Log)
	}
}

// replay checks the format and columns of a replayed log (its lines are
// readReplay's).
func (c *checker) replay(path string, l *Replay) {
	switch l.Format {
	case "":
		c.add(path+".format", "required: csv or clf (the common log format)")
	case "clf":
		if l.Time != "" {
			c.add(path+".time", "only a CSV log names its time column (format is clf)")
		}
		c.oneOf(path+".key", l.Key, "host", "user", "path")
	case "csv":
		c.text(path+".time", l.Time)
		c.text(path+".key", l.Key)
		switch {
		case orDefault(l.Time, "timestamp") != orDefault(l.Key, "key"):
		case l.Key == "":
			c.add(path+".time", "%s is the key's column (key's default)", quote(l.Time))
		default:
			c.add(path+".key", "%s names the time column too", quote(l.Key))
		}
	default:
		c.oneOf(path+".format", l.Format, "csv", "clf")
	}
}

// orDefault returns name, or def if it is "" (a default).
func orDefault(name, def string) string {
	if name == "" {
		return def
	}
	return name
}

// retry checks what a client does when refused: a client that gives up
// has no other field.
func (c *checker) retry(path string, r *Retry) {
	if !c.oneOf(path+".on_429", r.On429, "give_up", "immediate", "retry_after") {
		return
	}
	retries := r.On429 == "immediate" || r.On429 == "retry_after"
	only := func(field string, set bool) {
		if set && !retries {
			c.add(path+"."+field, "only a client that retries (on_429: immediate or retry_after) has %s", field)
		}
	}
	if c.span(path+".delay", r.Delay) {
		only("delay", r.Delay != 0)
	}
	if !(r.Jitter >= 0 && r.Jitter <= maxJitter) {
		c.add(path+".jitter", "%v is not in [0, %d]", r.Jitter, maxJitter)
	} else {
		only("jitter", r.Jitter != 0)
	}
	switch {
	case math.IsNaN(r.Budget) || math.IsInf(r.Budget, 0):
		c.add(path+".budget", "%v is not a finite number", r.Budget)
	case r.Budget < 0:
		c.add(path+".budget", "%g is negative", r.Budget)
	default:
		only("budget", r.Budget != 0)
	}
	if c.bounded(path+".max_attempts", r.MaxAttempts, maxRetryAttempts) {
		only("max_attempts", r.MaxAttempts != 0)
	}
}

// backend checks the backend's workers, service times and queue.
func (c *checker) backend(b *Backend) {
	if c.bounded("backend.concurrency", b.Concurrency, maxConcurrency) && b.Concurrency == 0 {
		c.add("backend.concurrency", "required: how many requests the backend serves at once")
	}
	if c.span("backend.service", b.Service) && b.Service == 0 {
		c.add("backend.service", "required: the mean service time (20ms)")
	}
	c.bounded("backend.queue", b.Queue, maxQueue)
	c.span("backend.timeout", b.Timeout)
	if !c.oneOf("backend.distribution", b.Distribution, "exponential", "constant", "uniform", "lognormal") || !c.span("backend.spread", b.Spread) {
		return
	}
	switch b.Distribution {
	case "uniform":
		if b.Spread > b.Service {
			c.add("backend.spread", "%s is more than service (%s): a service time would be negative", show(b.Spread), show(b.Service))
		}
	case "lognormal":
		if b.Spread <= b.Service {
			c.add("backend.spread", "required above service (%s): the 99th percentile of the service times, got %s", show(b.Service), show(b.Spread))
		}
	default:
		if b.Spread != 0 {
			c.add("backend.spread", "only uniform and lognormal service times have a spread (distribution is %s)",
				orDefault(b.Distribution, "exponential"))
		}
	}
}

// faults checks the outages of a run ending at end (0 if not known).
func (c *checker) faults(fs []Fault, end time.Duration) {
	if len(fs) > maxFaults {
		c.add("faults", "%d faults is too many (the most is %d)", len(fs), maxFaults)
		return
	}
	for i, f := range fs {
		path := "faults[" + strconv.Itoa(i) + "]"
		switch s := f.Store; {
		case s == "local" || s == "memory":
			c.add(path+".store", "%s limits do not fail: a fault is of a shared store (redis)", s)
		case s != "" && !storeName(s):
			c.add(path+".store", "invalid store name %s (lower-case letters, digits, '-' and '_', starting with a letter)", quote(s))
		}
		fromOK := c.span(path+".from", f.From)
		if !c.span(path+".to", f.To) {
			continue
		}
		switch {
		case f.To == 0:
			c.add(path+".to", "required: when the outage ends")
		case fromOK && f.To <= f.From:
			c.add(path+".to", "%s is not after from (%s)", show(f.To), show(f.From))
		case end > 0 && f.To > end:
			c.add(path+".to", "%s is after the end of the run (%s)", show(f.To), show(end))
		}
	}
}

// storeName reports whether s is a store's name as policy files write
// it (store: redis).
func storeName(s string) bool {
	if len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789-_") == ""
}
