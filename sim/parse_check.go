package sim

// The domains of Traffic's fields, checked for a Traffic read from a
// file and for one built in Go alike.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The bounds of a Traffic (see its fields' documentation).
const (
	year             = 365 * 24 * time.Hour
	maxBuckets       = 100_000
	maxRate          = 1e7
	maxClients       = 1_000_000
	maxRetryAttempts = 1000
	maxJitter        = 10
	maxConcurrency   = 1_000_000
	maxQueue         = 10_000_000
	maxInstances     = 10_000
	maxFaults        = 10_000
	maxHits          = 1<<32 - 1 // the most hits_addend Envoy sends
	maxDescriptors   = 1000      // per client, as admit serve takes per request
	maxEntries       = 32        // per descriptor, as admit serve takes
	maxText          = 4096      // bytes of a domain, key or value, as admit serve takes
	maxName          = 256       // bytes of a client's name
)

// checker collects the problems of a Traffic, by field path (the traffic
// file's names: clients[2].arrival.rate).
type checker struct{ ps problems }

func (c *checker) add(path, format string, args ...any) {
	c.ps = append(c.ps, problem{path: path, msg: fmt.Sprintf(format, args...)})
}

// check reports whether t is a Traffic Run can play: every field within
// the domain its documentation gives. The error, a problems, lists every
// problem found, each with the path of its field as a traffic file
// writes it (clients[2].arrival.rate), without positions: ParseTraffic
// adds them.
func (t *Traffic) check() error {
	c := &checker{}
	whole := t.Duration > 0 && t.Duration <= year
	switch {
	case t.Duration == 0:
		c.add("duration", "required: how long the run lasts (1h, 7d)")
	case t.Duration < 0:
		c.add("duration", "%s is negative", show(t.Duration))
	case t.Duration > year:
		c.add("duration", "%s is longer than a year (365d): a run lasts at most that", show(t.Duration))
	}
	if c.span("step", t.Step) && whole && t.Step > 0 {
		if n := (t.Duration + t.Step - 1) / t.Step; n > maxBuckets {
			c.add("step", "%s leaves %d buckets in the run's %s, more than %d: a step of at least %s",
				show(t.Step), n, show(t.Duration), maxBuckets, show((t.Duration+maxBuckets-1)/maxBuckets))
		}
	}
	if h := t.Headroom; h != 0 && !(h > 0 && h <= 1) {
		c.add("headroom", "%v is not a share in (0, 1] (0.7, or 70%%)", h)
	}
	c.bounded("instances", t.Instances, maxInstances)
	c.oneOf("store", t.Store, "shared", "local")
	c.oneOf("balance", t.Balance, "round_robin", "random")
	end := time.Duration(0)
	if whole {
		end = t.Duration
	}
	c.clients(t.Clients, end)
	if t.Backend != nil {
		c.backend(t.Backend)
	}
	c.faults(t.Faults, end)
	if len(c.ps) == 0 {
		return nil
	}
	return c.ps
}

// show writes a duration as time.Duration does, less its zero minutes
// and seconds after a larger unit: 1h, 1h30m, 1h30s, 1m30s, 500ms.
func show(d time.Duration) string {
	return strings.Replace(strings.Replace(d.String(), "m0s", "m", 1), "h0m", "h", 1)
}

// span checks a duration that may be 0 and at most a year.
func (c *checker) span(path string, d time.Duration) bool {
	switch {
	case d < 0:
		c.add(path, "%s is negative", show(d))
	case d > year:
		c.add(path, "%s is longer than a year (365d)", show(d))
	default:
		return true
	}
	return false
}

// bounded checks a count that may be 0 and at most hi.
func (c *checker) bounded(path string, v, hi int) bool {
	switch {
	case v < 0:
		c.add(path, "%d is negative", v)
	case v > hi:
		c.add(path, "%d is too large (the most is %d)", v, hi)
	default:
		return true
	}
	return false
}

// oneOf checks an enumeration's word ("" is its default, the first).
func (c *checker) oneOf(path, v string, words ...string) bool {
	if v == "" {
		return true
	}
	for _, w := range words {
		if v == w {
			return true
		}
	}
	c.add(path, "unknown value %s (want %s or %s)", quote(v), strings.Join(words[:len(words)-1], ", "), words[len(words)-1])
	return false
}

// text checks a string of at most maxText bytes.
func (c *checker) text(path, s string) {
	if len(s) > maxText {
		c.add(path, "%d bytes is too long (the most is %d)", len(s), maxText)
	}
}

// clients checks the clients of a run ending at end (0 if not known).
func (c *checker) clients(cs []Client, end time.Duration) {
	if len(cs) == 0 {
		c.add("clients", "required: at least one client")
		return
	}
	names := make(map[string]int, len(cs))
	tenants := 0
	for i := range cs {
		cl := &cs[i]
		path := "clients[" + strconv.Itoa(i) + "]"
		if c.name(path+".name", cl.Name) {
			if j, dup := names[cl.Name]; dup {
				c.add(path+".name", "%s is the name of clients[%d] too", quote(cl.Name), j)
			} else {
				names[cl.Name] = i
			}
		}
		if c.bounded(path+".count", cl.Count, maxClients) {
			before := tenants
			tenants += max(cl.Count, 1)
			if before <= maxClients && tenants > maxClients {
				c.add(path+".count", "makes %d clients in all, more than %d", tenants, maxClients)
			}
		}
		c.client(path, cl, end)
	}
	c.tenantNames(cs, names)
}

// name checks a client's name.
func (c *checker) name(path, s string) bool {
	switch {
	case s == "":
		c.add(path, "required: the client's name in the results")
	case len(s) > maxName:
		c.add(path, "%d bytes is too long (the most is %d)", len(s), maxName)
	case !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0:
		c.add(path, "%s holds invalid UTF-8 or a control character", quote(s))
	default:
		return true
	}
	return false
}

// tenantNames checks that no client of one is named as a tenant of a
// client of a Count (Name-i).
func (c *checker) tenantNames(cs []Client, names map[string]int) {
	for i := range cs {
		if cs[i].Count > 1 {
			continue
		}
		cut := strings.LastIndexByte(cs[i].Name, '-')
		if cut < 0 {
			continue
		}
		k, err := strconv.Atoi(cs[i].Name[cut+1:])
		j, ok := names[cs[i].Name[:cut]]
		if err == nil && k >= 0 && ok && k < cs[j].Count && strconv.Itoa(k) == cs[i].Name[cut+1:] {
			c.add(fmt.Sprintf("clients[%d].name", i), "%s is the name of a tenant of clients[%d] (%s, count %d)",
				quote(cs[i].Name), j, quote(cs[j].Name), cs[j].Count)
		}
	}
}

// client checks a client's fields but its name and count.
func (c *checker) client(path string, cl *Client, end time.Duration) {
	c.text(path+".domain", cl.Domain)
	c.descriptors(path+".descriptors", cl)
	switch {
	case cl.Hits < 0:
		c.add(path+".hits", "%d is negative", cl.Hits)
	case cl.Hits > maxHits:
		c.add(path+".hits", "%d is too large (the most is %d)", cl.Hits, int64(maxHits))
	}
	startOK := c.span(path+".start", cl.Start)
	stopOK := c.span(path+".stop", cl.Stop)
	if startOK && end > 0 && cl.Start >= end {
		c.add(path+".start", "%s is not before the end of the run (%s)", show(cl.Start), show(end))
	}
	switch {
	case !stopOK || cl.Stop == 0:
	case end > 0 && cl.Stop > end:
		c.add(path+".stop", "%s is after the end of the run (%s)", show(cl.Stop), show(end))
	case startOK && cl.Stop <= cl.Start:
		c.add(path+".stop", "%s is not after start (%s)", show(cl.Stop), show(cl.Start))
	}
	c.arrival(path+".arrival", &cl.Arrival)
	c.retry(path+".retry", &cl.Retry)
}

// descriptors checks a client's descriptors.
func (c *checker) descriptors(path string, cl *Client) {
	switch {
	case len(cl.Descriptors) == 0:
		c.add(path, "required: at least one descriptor (tenant: acme)")
		return
	case len(cl.Descriptors) > maxDescriptors:
		c.add(path, "%d descriptors is too many (the most is %d)", len(cl.Descriptors), maxDescriptors)
		return
	}
	replay := cl.Arrival.Process == "replay"
	for i, d := range cl.Descriptors {
		dpath := path + "[" + strconv.Itoa(i) + "]"
		switch n := len(d.Entries); {
		case n == 0:
			c.add(dpath, "a descriptor has at least one entry (key: value)")
		case n > maxEntries:
			c.add(dpath, "%d entries is too many (the most is %d)", n, maxEntries)
		}
		for _, e := range d.Entries {
			epath := child(dpath, e.Key)
			if e.Key == "" {
				c.add(epath, "an entry's key must not be empty")
			}
			c.text(epath, e.Key)
			c.text(epath, e.Value)
			if !replay && strings.Contains(e.Value, "{key}") {
				c.add(epath, "{key} stands for the key of a replayed log's line, and this client does not replay one (arrival: {process: replay})")
			}
		}
	}
}

// rate checks a rate in requests per second, required.
func (c *checker) rate(path string, v float64) {
	switch {
	case v == 0:
		c.add(path, "required: requests per second (2/s, 100/min)")
	case math.IsNaN(v) || math.IsInf(v, 0):
		c.add(path, "%v is not a finite number", v)
	case v < 0:
		c.add(path, "%g is negative", v)
	case v > maxRate:
		c.add(path, "%g per second is too high (the most is %g)", v, maxRate)
	}
}
