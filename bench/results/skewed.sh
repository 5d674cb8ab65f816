#!/bin/sh
# BenchmarkSkewed (skewed_test.go), each entry in a process of its own (so
# with a redis-server of its own), in turn, the order rotating from round
# to round. Prints a machine line first and the load average before each
# run.
# usage (from bench/): results/skewed.sh [ROUNDS] [BENCHTIME] [ENTRIES...]
#   defaults: 3 rounds of 10s, entries admit redis_rate ulule
set -e
ROUNDS=${1:-3}; T=${2:-10s}
[ $# -ge 2 ] && shift 2 || shift $#
[ $# -eq 0 ] && set -- admit redis_rate ulule
BIN=$(mktemp -d)/bench.test
go test -c -o "$BIN" .
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), nproc $(nproc), $(uname -sr), $(go version | cut -d' ' -f3-), $(redis-server --version | cut -d' ' -f3)"
for r in $(seq 1 "$ROUNDS"); do
	for e in "$@"; do
		echo "### round $r $e (load $(cut -d' ' -f1-3 /proc/loadavg))"
		"$BIN" -test.run '^$' -test.bench "BenchmarkSkewed/^$e\$" -test.benchmem -test.benchtime "$T"
	done
	first=$1; shift; set -- "$@" "$first"
done
