package sim

import "strings"

// with returns head with old replaced by new (once).
func with(old, new string) string { return strings.Replace(head, old, new, 1) }

// parseErrorCases are bad traffic files and the whole error of each.
var parseErrorCases = []struct {
	name, src string
	want      []string
}{
	// The file as a whole.
	{"empty", "", []string{"t.yaml:1: empty file: want a traffic file (duration, clients)"}},
	{"comments", "# nothing\n\n# here\n", []string{"t.yaml:1: empty file: want a traffic file (duration, clients)"}},
	{"null", "~\n", []string{"t.yaml:1: empty file: want a traffic file (duration, clients)"}},
	{"list", "- a\n", []string{"t.yaml:1:1: want a mapping, got a list"}},
	{"scalar", "duration\n", []string{`t.yaml:1:1: want a mapping, got the string "duration"`}},
	{"unclosed", "duration: 1h\nclients: [\n  {name: a}\n", []string{"t.yaml:3: malformed YAML: did not find expected ',' or ']'"}},
	{"tab", "duration: 1h\n\tclients: []\n", []string{"t.yaml:2: malformed YAML: found a tab character that violates indentation"}},
	{"utf8", "duration: 1h\nclients: \xff\n", []string{"t.yaml:2:10: malformed YAML: invalid UTF-8 (byte 0xFF): a traffic file is UTF-8 text"}},
	{"two documents", head + "---\nduration: 2h\n", []string{"t.yaml:6:1: a second YAML document: a traffic file holds one"}},
	{"unknown anchor", "duration: *d\n", []string{"t.yaml:1:11: malformed YAML: unknown anchor 'd' referenced"}},
	{"unknown field", head + "durations: 1h\n", []string{
		`t.yaml:6:1: durations: unknown field "durations" (want one of duration, step, seed, headroom, instances, store, balance, backend, faults, clients)`,
	}},
	{"unknown nested field", with("{rate: 1}", "{rate: 1, burst: 2}"), []string{
		`t.yaml:5:24: clients[0].arrival.burst: unknown field "burst" (want one of process, rate, peak, period, on, off, log, format, time, key)`,
	}},
	{"quoted key path", with("{rate: 1}", "{rate: 1, 'a b': 2}"), []string{
		`t.yaml:5:24: clients[0].arrival["a b"]: unknown field "a b" (want one of process, rate, peak, period, on, off, log, format, time, key)`,
	}},
	{"duplicate", "duration: 400d\n" + head, []string{
		"t.yaml:1:11: duration: 9600h is longer than a year (365d): a run lasts at most that",
		"t.yaml:2:1: duration: given twice (first on line 1)",
	}},
	{"merge key", head + "    <<: {hits: 2}\n", []string{"t.yaml:6:5: clients[0]: merge keys (<<) are not taken: write the fields"}},
	{"null key", "instances: -1\n" + head + "~: 1\n", []string{
		"t.yaml:1:12: instances: -1 is negative",
		"t.yaml:7:1: want a string key, got nothing (null)",
	}},
	{"self alias", "duration: 1h\nclients: &c\n  - name: a\n    arrival: {rate: 1}\n    descriptors: *c\n", []string{
		"t.yaml:5:18: clients[0].descriptors: alias *c stands for a node that holds it",
	}},

	// Durations.
	{"no duration", "clients: []\n", []string{
		"t.yaml:1:1: duration: required: how long the run lasts (1h, 7d)",
		"t.yaml:1:10: clients: required: at least one client",
	}},
	{"zero duration", with("1h", "0s"), []string{"t.yaml:1:11: duration: required: how long the run lasts (1h, 7d)"}},
	{"years", with("1h", "5y"), []string{`t.yaml:1:11: duration: want a duration (10s, 5m, 1h, 2d), got "5y": the units go up to d (days); a run lasts at most a year (365d)`}},
	{"weeks", with("1h", "2 weeks"), []string{`t.yaml:1:11: duration: want a duration (10s, 5m, 1h, 2d), got "2 weeks": the units go up to d (days); a run lasts at most a year (365d)`}},
	{"hours beyond a year", with("1h", "100000h"), []string{"t.yaml:1:11: duration: 100000h is longer than a year (365d): a run lasts at most that"}},
	{"days beyond a year", with("1h", "366d"), []string{"t.yaml:1:11: duration: 8784h is longer than a year (365d): a run lasts at most that"}},
	{"overflow", with("1h", "3000000h"), []string{`t.yaml:1:11: duration: "3000000h" is too long for a duration`}},
	{"overflow days", with("1h", "106752d"), []string{`t.yaml:1:11: duration: "106752d" is too long for a duration`}},
	{"overflow sum", with("1h", "106751d24h"), []string{`t.yaml:1:11: duration: "106751d24h" is too long for a duration`}},
	{"huge days", with("1h", "99999999999999999999d"), []string{`t.yaml:1:11: duration: "99999999999999999999d" is too long for a duration`}},
	{"negative", with("1h", "-1h"), []string{`t.yaml:1:11: duration: "-1h" is negative`}},
	{"number", with("1h", "3600"), []string{`t.yaml:1:11: duration: want a duration (10s, 5m, 1h, 2d), got "3600"`}},
	{"list duration", with("1h", "[1h]"), []string{`t.yaml:1:11: duration: want a duration (10s, 5m, 1h, 2d), got a list`}},
	{"step buckets", "step: 1ms\n" + head, []string{"t.yaml:1:7: step: 1ms leaves 3600000 buckets in the run's 1h, more than 100000: a step of at least 36ms"}},
	{"step negative", "step: -1s\n" + head, []string{`t.yaml:1:7: step: "-1s" is negative`}},

	// Numbers.
	{"seed negative", "seed: -1\n" + head, []string{"t.yaml:1:7: seed: -1 is negative"}},
	{"seed huge", "seed: 18446744073709551616\n" + head, []string{"t.yaml:1:7: seed: 18446744073709551616 is too large (the most is 18446744073709551615)"}},
	{"seed fraction", "seed: 1.5\n" + head, []string{"t.yaml:1:7: seed: want a whole number, got a number (1.5)"}},
	{"seed quoted", "seed: '1'\n" + head, []string{`t.yaml:1:7: seed: want a whole number, got the string "1"`}},
	{"headroom", "headroom: 1.5\n" + head, []string{"t.yaml:1:11: headroom: 1.5 is not a share in (0, 1] (0.7, or 70%)"}},
	{"headroom negative", "headroom: -0.5\n" + head, []string{"t.yaml:1:11: headroom: -0.5 is not a share in (0, 1] (0.7, or 70%)"}},
	{"headroom percent", "headroom: 170%\n" + head, []string{"t.yaml:1:11: headroom: 1.7 is not a share in (0, 1] (0.7, or 70%)"}},
	{"headroom text", "headroom: lots\n" + head, []string{`t.yaml:1:11: headroom: want a number (0.7) or a percentage (70%), got the string "lots"`}},
	{"headroom nan", "headroom: .nan\n" + head, []string{"t.yaml:1:11: headroom: want a finite number, got .nan"}},
	{"headroom inf", "headroom: -.inf\n" + head, []string{"t.yaml:1:11: headroom: want a finite number, got -.inf"}},
	{"instances", "instances: 10001\n" + head, []string{"t.yaml:1:12: instances: 10001 is too large (the most is 10000)"}},
	{"instances negative", "instances: -3\n" + head, []string{"t.yaml:1:12: instances: -3 is negative"}},
	{"instances huge", "instances: 1e300\n" + head, []string{"t.yaml:1:12: instances: 1e300 is too large"}},
	{"instances bool", "instances: yes\n" + head, []string{`t.yaml:1:12: instances: want a whole number, got the string "yes"`}},
	{"store", "store: redis\nbalance: least_loaded\n" + head, []string{
		`t.yaml:1:8: store: unknown value "redis" (want shared or local)`,
		`t.yaml:2:10: balance: unknown value "least_loaded" (want round_robin or random)`,
	}},
}

func init() {
	parseErrorCases = append(parseErrorCases, clientErrorCases...)
	parseErrorCases = append(parseErrorCases, partErrorCases...)
}
