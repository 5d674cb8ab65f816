package redisbench

import (
	"testing"
	"time"
)

func TestParseStats(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=10,usec=150,usec_per_call=15.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_get:calls=20,usec=40,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=7,usec=700,usec_per_call=100.00,rejected_calls=0,failed_calls=0\r\n" +
		"\r\n# CPU\r\n" +
		"used_cpu_sys:1.500000\r\nused_cpu_user:0.250000\r\n" +
		"used_cpu_sys_children:9.000000\r\n" +
		"used_cpu_sys_main_thread:1.000000\r\nused_cpu_user_main_thread:0.200000\r\n"
	s, err := parseStats(info)
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{Calls: 30, Usec: 190, Evals: 10, EvalUsec: 150, CPU: 1750 * time.Millisecond, MainCPU: 1200 * time.Millisecond}
	if s != want {
		t.Errorf("parseStats = %+v, want %+v", s, want)
	}
	if _, err := parseStats("# Commandstats\r\ncmdstat_get:calls=x,usec=1\r\n"); err == nil {
		t.Error("a malformed count parsed")
	}
	if _, err := parseStats("# Server\r\nredis_version:7.0.15\r\n"); err == nil {
		t.Error("a reply without the sections parsed")
	}
}
