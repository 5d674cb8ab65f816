package redisbench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Stats are Redis's counters about itself, from INFO commandstats and
// INFO cpu. Subtract two readings (Sub) for what a run cost.
type Stats struct {
	// Calls is the number of commands Redis has run, summed over
	// commandstats, those that scripts call (redis.call) included, INFO
	// itself excluded. Usec is the time they took, in µs.
	Calls, Usec int64

	// Evals and EvalUsec are the EVAL and EVALSHA calls (and their _RO
	// forms) and their time, which includes the commands the scripts
	// called (counted again in Calls and Usec).
	Evals, EvalUsec int64

	// CPU is the CPU time of the redis-server process, user and system
	// (used_cpu_user + used_cpu_sys); MainCPU that of its main thread,
	// the one that runs every command.
	CPU, MainCPU time.Duration
}

// ReadStats reads c's server's Stats.
func ReadStats(ctx context.Context, c redis.UniversalClient) (Stats, error) {
	info, err := c.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return Stats{}, err
	}
	return parseStats(info)
}

// Sub returns s - o, field by field.
func (s Stats) Sub(o Stats) Stats {
	return Stats{
		Calls: s.Calls - o.Calls, Usec: s.Usec - o.Usec,
		Evals: s.Evals - o.Evals, EvalUsec: s.EvalUsec - o.EvalUsec,
		CPU: s.CPU - o.CPU, MainCPU: s.MainCPU - o.MainCPU,
	}
}

// parseStats reads the reply of INFO commandstats cpu.
func parseStats(info string) (Stats, error) {
	var s Stats
	var sawCmd, sawCPU bool
	for line := range strings.SplitSeq(info, "\n") {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		if cmd, ok := strings.CutPrefix(name, "cmdstat_"); ok {
			sawCmd = true
			if cmd == "info" {
				continue
			}
			calls, usec, err := parseCmdstat(value)
			if err != nil {
				return Stats{}, fmt.Errorf("redisbench: INFO %s: %w", name, err)
			}
			s.Calls += calls
			s.Usec += usec
			switch cmd {
			case "eval", "evalsha", "eval_ro", "evalsha_ro":
				s.Evals += calls
				s.EvalUsec += usec
			}
			continue
		}
		var dst *time.Duration
		switch name {
		case "used_cpu_sys", "used_cpu_user":
			dst = &s.CPU
		case "used_cpu_sys_main_thread", "used_cpu_user_main_thread":
			dst = &s.MainCPU
		default:
			continue
		}
		sec, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return Stats{}, fmt.Errorf("redisbench: INFO %s: %w", name, err)
		}
		*dst += time.Duration(sec * 1e9)
		sawCPU = true
	}
	if !sawCmd || !sawCPU {
		return Stats{}, fmt.Errorf("redisbench: INFO commandstats cpu: no commandstats or cpu section in %q", info)
	}
	return s, nil
}

// parseCmdstat reads "calls=N,usec=N,..." of one command.
func parseCmdstat(v string) (calls, usec int64, err error) {
	var sawCalls, sawUsec bool
	for field := range strings.SplitSeq(v, ",") {
		k, n, _ := strings.Cut(field, "=")
		var dst *int64
		switch k {
		case "calls":
			dst, sawCalls = &calls, true
		case "usec":
			dst, sawUsec = &usec, true
		default:
			continue
		}
		if *dst, err = strconv.ParseInt(n, 10, 64); err != nil {
			return 0, 0, err
		}
	}
	if !sawCalls || !sawUsec {
		return 0, 0, fmt.Errorf("no calls or usec in %q", v)
	}
	return calls, usec, nil
}
