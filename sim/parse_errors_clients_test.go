package sim

import "strings"

// clientLine returns a client's line: a valid one, with more fields.
func clientLine(name, more string) string {
	return "  - {name: " + name + ", descriptors: [{k: v}], arrival: {rate: 1}" + more + "}\n"
}

var clientErrorCases = []struct {
	name, src string
	want      []string
}{
	{"clients mapping", "duration: 1h\nclients: {name: a}\n", []string{"t.yaml:2:10: clients: want a list, got a mapping"}},
	{"client scalar", "duration: 1h\nclients: [a, 3]\n", []string{
		`t.yaml:2:11: clients[0]: want a mapping, got the string "a"`,
		`t.yaml:2:14: clients[1]: want a mapping, got a number (3)`,
	}},
	{"no name", "duration: 1h\nclients:\n" + clientLine("''", ""), []string{"t.yaml:3:12: clients[0].name: required: the client's name in the results"}},
	{"name missing", "duration: 1h\nclients:\n  - {descriptors: [{k: v}], arrival: {rate: 1}}\n", []string{"t.yaml:3:5: clients[0].name: required: the client's name in the results"}},
	{"name control", "duration: 1h\nclients:\n" + clientLine(`"a\tb"`, ""), []string{`t.yaml:3:12: clients[0].name: "a\tb" holds invalid UTF-8 or a control character`}},
	{"name long", "duration: 1h\nclients:\n" + clientLine(strings.Repeat("n", 257), ""), []string{"t.yaml:3:12: clients[0].name: 257 bytes is too long (the most is 256)"}},
	{"same names", head + clientLine("b", "") + clientLine("a", ""), []string{`t.yaml:7:12: clients[2].name: "a" is the name of clients[0] too`}},
	{"tenant name", head + "    count: 3\n" + clientLine("a-2", "") + clientLine("a-3", ""), []string{
		`t.yaml:7:12: clients[1].name: "a-2" is the name of a tenant of clients[0] ("a", count 3)`,
	}},
	{"count negative", head + "    count: -2\n", []string{"t.yaml:6:12: clients[0].count: -2 is negative"}},
	{"count huge", head + "    count: 1000001\n", []string{"t.yaml:6:12: clients[0].count: 1000001 is too large (the most is 1000000)"}},
	{"count total", head + "    count: 600000\n" + clientLine("b", ", count: 400000") + clientLine("c", ""), []string{
		"t.yaml:8:5: clients[2].count: makes 1000001 clients in all, more than 1000000",
	}},
	{"count fraction", head + "    count: 2.5\n", []string{"t.yaml:6:12: clients[0].count: want a whole number, got a number (2.5)"}},
	{"domain long", head + "    domain: " + strings.Repeat("d", 4097) + "\n", []string{"t.yaml:6:13: clients[0].domain: 4097 bytes is too long (the most is 4096)"}},
	{"no descriptors", "duration: 1h\nclients:\n  - {name: a, arrival: {rate: 1}}\n", []string{"t.yaml:3:5: clients[0].descriptors: required: at least one descriptor (tenant: acme)"}},
	{"empty descriptors", with("[{k: v}]", "[]"), []string{"t.yaml:4:18: clients[0].descriptors: required: at least one descriptor (tenant: acme)"}},
	{"empty descriptor", with("[{k: v}]", "[{k: v}, {}]"), []string{"t.yaml:4:27: clients[0].descriptors[1]: a descriptor has at least one entry (key: value)"}},
	{"descriptor list", with("[{k: v}]", "[[k, v]]"), []string{"t.yaml:4:19: clients[0].descriptors[0]: want a mapping of entries (tenant: acme), got a list"}},
	{"descriptor null", with("[{k: v}]", "[{k: }]"), []string{"t.yaml:4:23: clients[0].descriptors[0].k: want a string, got nothing (null)"}},
	{"descriptor empty key", with("[{k: v}]", "[{'': v}]"), []string{`t.yaml:4:24: clients[0].descriptors[0][""]: an entry's key must not be empty`}},
	{"descriptor twice", with("[{k: v}]", "[{k: v, k: w}]"), []string{"t.yaml:4:26: clients[0].descriptors[0].k: given twice (first on line 4)"}},
	{"descriptor key", with("[{k: v}]", "[{k: '{key}'}]"), []string{
		"t.yaml:4:23: clients[0].descriptors[0].k: {key} stands for the key of a replayed log's line, and this client does not replay one (arrival: {process: replay})",
	}},
	{"descriptor entries", with("[{k: v}]", "[{"+strings.Repeat("k: v, ", 1)+entries(33)+"}]"), []string{"t.yaml:4:19: clients[0].descriptors[0]: 34 entries is too many (the most is 32)"}},
	{"hits", head + "    hits: 4294967296\n", []string{"t.yaml:6:11: clients[0].hits: 4294967296 is too large (the most is 4294967295)"}},
	{"hits negative", head + "    hits: -1\n", []string{"t.yaml:6:11: clients[0].hits: -1 is negative"}},
	{"start late", head + "    start: 1h\n", []string{"t.yaml:6:12: clients[0].start: 1h is not before the end of the run (1h)"}},
	{"stop late", head + "    stop: 61m\n", []string{"t.yaml:6:11: clients[0].stop: 1h1m is after the end of the run (1h)"}},
	{"stop early", head + "    start: 30m\n    stop: 20m\n", []string{"t.yaml:7:11: clients[0].stop: 20m is not after start (30m)"}},
	{"start negative", head + "    start: -1m\n", []string{`t.yaml:6:12: clients[0].start: "-1m" is negative`}},
}

// entries returns n entries e0: v, e1: v...
func entries(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("e" + strings.Repeat("x", i) + ": v")
	}
	return b.String()
}

var partErrorCases = []struct {
	name, src string
	want      []string
}{
	// Arrivals.
	{"process", with("{rate: 1}", "{process: bursty, rate: 1}"), []string{`t.yaml:5:24: clients[0].arrival.process: unknown value "bursty" (want poisson, constant, on_off, diurnal or replay)`}},
	{"no arrival", "duration: 1h\nclients:\n  - {name: a, descriptors: [{k: v}]}\n", []string{"t.yaml:3:5: clients[0].arrival.rate: required: requests per second (2/s, 100/min)"}},
	{"rate zero", with("rate: 1", "rate: 0/s"), []string{"t.yaml:5:21: clients[0].arrival.rate: required: requests per second (2/s, 100/min)"}},
	{"rate negative", with("rate: 1", "rate: -2/s"), []string{"t.yaml:5:21: clients[0].arrival.rate: -2 is negative"}},
	{"rate high", with("rate: 1", "rate: 2e7"), []string{"t.yaml:5:21: clients[0].arrival.rate: 2e+07 per second is too high (the most is 1e+07)"}},
	{"rate text", with("rate: 1", "rate: fast"), []string{`t.yaml:5:21: clients[0].arrival.rate: want a rate (2/s, 100/min, 5000/h, or a number per second), got "fast"`}},
	{"rate nan", with("rate: 1", "rate: .nan"), []string{`t.yaml:5:21: clients[0].arrival.rate: want a rate (2/s, 100/min, 5000/h, or a number per second), got ".nan"`}},
	{"rate period", with("rate: 1", "rate: 2/fortnight"), []string{
		`t.yaml:5:21: clients[0].arrival.rate: rate "2/fortnight": period "fortnight": want a unit (s, min, h, d) or a duration (500ms, 5m, 1h30m)`,
	}},
	{"rate list", with("rate: 1", "rate: [1]"), []string{`t.yaml:5:21: clients[0].arrival.rate: want a rate (2/s, 100/min, or a number per second), got a list`}},
	{"diurnal", with("{rate: 1}", "{process: diurnal, rate: 5, peak: 2, period: -1h}"), []string{
		"t.yaml:5:48: clients[0].arrival.peak: 2 per second is below rate (5 per second)",
		`t.yaml:5:59: clients[0].arrival.period: "-1h" is negative`,
	}},
	{"diurnal no peak", with("{rate: 1}", "{process: diurnal, rate: 5}"), []string{"t.yaml:5:14: clients[0].arrival.peak: required: requests per second (2/s, 100/min)"}},
	{"on_off", with("{rate: 1}", "{process: on-off, rate: 5, on: 0s}"), []string{
		"t.yaml:5:14: clients[0].arrival.off: required: how long each phase lasts (10s)",
		"t.yaml:5:45: clients[0].arrival.on: required: how long each phase lasts (10s)",
	}},
	{"other process fields", with("{rate: 1}", "{rate: 1, peak: 2, period: 1h, on: 1s, off: 1s}"), []string{
		"t.yaml:5:30: clients[0].arrival.peak: only diurnal has peak (process is poisson)",
		"t.yaml:5:41: clients[0].arrival.period: only diurnal has period (process is poisson)",
		"t.yaml:5:49: clients[0].arrival.on: only on_off has on (process is poisson)",
		"t.yaml:5:58: clients[0].arrival.off: only on_off has off (process is poisson)",
	}},
	{"log without replay", with("{rate: 1}", "{rate: 1, log: access.log, format: clf}"), []string{"t.yaml:5:29: clients[0].arrival.log: only replay has log (process is poisson)"}},
	{"replay", with("{rate: 1}", "{process: replay, rate: 1, log: access.csv, format: csv, time: key}"), []string{
		"t.yaml:5:38: clients[0].arrival.rate: only a process other than replay (whose requests come at the log's times) has rate (process is replay)",
		`t.yaml:5:77: clients[0].arrival.time: "key" is the key's column (key's default)`,
	}},
	{"format without replay", with("{rate: 1}", "{rate: 1, format: clf}"), []string{"t.yaml:5:14: clients[0].arrival.log: only replay has log (process is poisson)"}},
	{"replay no log", with("{rate: 1}", "{process: replay}"), []string{"t.yaml:5:14: clients[0].arrival.log: required: the access log to replay"}},
	{"replay only format", with("{rate: 1}", "{process: replay, format: clf}"), []string{"t.yaml:5:14: clients[0].arrival.log: missing: the access log to replay (a path, relative to this file)"}},
	{"replay no format", with("{rate: 1}", "{process: replay, log: access.log}"), []string{"t.yaml:5:14: clients[0].arrival.format: required: csv or clf (the common log format)"}},
	{"replay clf", with("{rate: 1}", "{process: replay, log: access.log, format: CLF, time: ts, key: ip}"), []string{
		"t.yaml:5:68: clients[0].arrival.time: only a CSV log names its time column (format is clf)",
		`t.yaml:5:77: clients[0].arrival.key: unknown value "ip" (want host, user or path)`,
	}},
	{"replay format", with("{rate: 1}", "{process: replay, log: access.log, format: json}"), []string{`t.yaml:5:57: clients[0].arrival.format: unknown value "json" (want csv or clf)`}},
	{"replay missing", with("{rate: 1}", "{process: replay, log: gone.log, format: clf}"), []string{"t.yaml:5:37: clients[0].arrival.log: open gone.log: file does not exist"}},
	{"replay huge", with("{rate: 1}", "{process: replay, log: logs/huge.log, format: clf}"), []string{"t.yaml:5:37: clients[0].arrival.log: logs/huge.log: larger than the limit of 268435456 bytes"}},
	{"replay empty name", with("{rate: 1}", "{process: replay, log: '', format: clf}"), []string{"t.yaml:5:37: clients[0].arrival.log: must not be empty"}},

	// Retries.
	{"on_429", head + "    retry: {on_429: later}\n", []string{`t.yaml:6:21: clients[0].retry.on_429: unknown value "later" (want give_up, immediate or retry_after)`}},
	{"give up", head + "    retry: {on_429: give_up, delay: 1s, jitter: 1, budget: 0.5, max_attempts: 3}\n", []string{
		"t.yaml:6:37: clients[0].retry.delay: only a client that retries (on_429: immediate or retry_after) has delay",
		"t.yaml:6:49: clients[0].retry.jitter: only a client that retries (on_429: immediate or retry_after) has jitter",
		"t.yaml:6:60: clients[0].retry.budget: only a client that retries (on_429: immediate or retry_after) has budget",
		"t.yaml:6:79: clients[0].retry.max_attempts: only a client that retries (on_429: immediate or retry_after) has max_attempts",
	}},
	{"retry domains", head + "    retry: {on_429: retry_after, delay: -1s, jitter: 11, budget: -0.5, max_attempts: 1001}\n", []string{
		`t.yaml:6:41: clients[0].retry.delay: "-1s" is negative`,
		"t.yaml:6:54: clients[0].retry.jitter: 11 is not in [0, 10]",
		"t.yaml:6:66: clients[0].retry.budget: -0.5 is negative",
		"t.yaml:6:86: clients[0].retry.max_attempts: 1001 is too large (the most is 1000)",
	}},
	{"retry nan", head + "    retry: {on_429: immediate, jitter: .NaN}\n", []string{"t.yaml:6:40: clients[0].retry.jitter: want a finite number, got .NaN"}},

	// The backend.
	{"backend scalar", "backend: big\n" + head, []string{`t.yaml:1:10: backend: want a mapping, got the string "big"`}},
	{"backend empty", "backend: {}\n" + head, []string{
		"t.yaml:1:10: backend.concurrency: required: how many requests the backend serves at once",
		"t.yaml:1:10: backend.service: required: the mean service time (20ms)",
	}},
	{"backend bounds", "backend: {concurrency: 1000001, service: 400d, queue: -1, timeout: 366d, distribution: gamma}\n" + head, []string{
		"t.yaml:1:24: backend.concurrency: 1000001 is too large (the most is 1000000)",
		"t.yaml:1:42: backend.service: 9600h is longer than a year (365d)",
		"t.yaml:1:55: backend.queue: -1 is negative",
		"t.yaml:1:68: backend.timeout: 8784h is longer than a year (365d)",
		`t.yaml:1:88: backend.distribution: unknown value "gamma" (want exponential, constant, uniform or lognormal)`,
	}},
	{"spread exponential", "backend: {concurrency: 1, service: 1s, spread: 1ms}\n" + head, []string{
		"t.yaml:1:48: backend.spread: only uniform and lognormal service times have a spread (distribution is exponential)",
	}},
	{"spread uniform", "backend: {concurrency: 1, service: 1s, distribution: uniform, spread: 2s}\n" + head, []string{
		"t.yaml:1:71: backend.spread: 2s is more than service (1s): a service time would be negative",
	}},
	{"spread lognormal", "backend: {concurrency: 1, service: 1s, distribution: lognormal}\n" + head, []string{
		"t.yaml:1:10: backend.spread: required above service (1s): the 99th percentile of the service times, got 0s",
	}},
	{"queue huge", "backend: {concurrency: 1, service: 1s, queue: 1e8}\n" + head, []string{"t.yaml:1:47: backend.queue: 100000000 is too large (the most is 10000000)"}},

	// Faults.
	{"faults", "faults:\n  - {store: local, from: 10m, to: 5m}\n  - {store: Redis!, from: 1m, to: 2h}\n  - {from: 1m}\n  - 3\n" + head, []string{
		"t.yaml:2:13: faults[0].store: local limits do not fail: a fault is of a shared store (redis)",
		"t.yaml:2:35: faults[0].to: 5m is not after from (10m)",
		`t.yaml:3:13: faults[1].store: invalid store name "redis!" (lower-case letters, digits, '-' and '_', starting with a letter)`,
		"t.yaml:3:35: faults[1].to: 2h is after the end of the run (1h)",
		"t.yaml:4:5: faults[2].to: required: when the outage ends",
		"t.yaml:5:5: faults[3]: want a mapping, got a number (3)",
	}},
}
