package bench

// The cost of admit serve's status page (issue 17): the skewed RLS
// workload (Zipf keys, a limit that denies the hot ones, so the sketch of
// denied keys works) against admit serve in memory, with the page on and
// off (--no-status), side by side in one run. The memory store is the
// worst case: nothing else costs as little per check. -count=N runs one
// N times, then the other: alternate them from a shell loop instead (see
// bench/RESULTS.md, "The status page's cost").

import "testing"

func BenchmarkRLSStatus(b *testing.B) {
	if testing.Short() {
		b.Skip("runs admit serve as a process; not under -short")
	}
	b.Run("status-on", func(b *testing.B) {
		target, pid := admitServe(b, rlsSkewedEnvoy, false)
		benchRLSSkewed(b, target, pid, nil)
	})
	b.Run("status-off", func(b *testing.B) {
		target, pid := admitServe(b, rlsSkewedEnvoy, false, "--no-status")
		benchRLSSkewed(b, target, pid, nil)
	})
}
