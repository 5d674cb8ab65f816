#!/bin/sh
# Builds the hot-path test binaries of two trees and runs them alternately.
# usage: hotbench.sh OLD NEW ROUNDS
set -e
OLD=$1; NEW=$2; ROUNDS=${3:-3}
OUT=/tmp/hotbench; mkdir -p $OUT
for t in old new; do
  d=$OLD; [ $t = new ] && d=$NEW
  (cd $d && go test -c -o $OUT/root.$t . >/dev/null)
  (cd $d/bench && go test -c -o $OUT/bench.$t . >/dev/null)
  (cd $d/server && go test -c -o $OUT/server.$t . >/dev/null)
done
for r in $(seq 1 $ROUNDS); do
  for t in old new; do
    echo "### round $r $t"
    (cd $OLD && $OUT/root.$t -test.run '^$' -test.bench 'BenchmarkAllowN$/.*/gcra' -test.benchmem -test.benchtime 200ms)
    (cd $NEW/bench && $OUT/bench.$t -test.run '^$' -test.bench 'BenchmarkKeyed1M$/admit|BenchmarkRedisGCRA/.*/admit|BenchmarkRLS$/admit-memory|BenchmarkRLS$/admit-redis$' -test.benchmem -test.benchtime 2s)
    (cd $NEW/server && $OUT/server.$t -test.run '^$' -test.bench 'BenchmarkRLSServer' -test.benchmem -test.benchtime 2s)
  done
done
