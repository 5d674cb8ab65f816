package server

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/redisstore"
)

// benchPolicy is envoyproxy/ratelimit's kind of rule: a fixed window per
// value, high enough that the load is admitted.
const benchPolicy = `
domain: bench
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 1000000000}
`

// BenchmarkRLSDecide is ShouldRateLimit called directly: conversion,
// decision and response, without the network.
func BenchmarkRLSDecide(b *testing.B) {
	s, err := newRLS(grpcSource(grpcEngine(b, benchPolicy, nil)))
	if err != nil {
		b.Fatal(err)
	}
	reqs := make([]*rlsv3.RateLimitRequest, 1024)
	for i := range reqs {
		reqs[i] = rlsReq("bench", 1, rlsDesc("remote_address", "10.0.0."+strconv.Itoa(i)))
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.ShouldRateLimit(ctx, reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRLSServer is Envoy's ShouldRateLimit through a real gRPC
// server on loopback TCP, 64 calls in flight (over 4 connections, as
// Envoy's workers hold), one descriptor per call, on the in-memory store
// and on a local Redis: checks/s, and the p50 and p99 latency of a call.
func BenchmarkRLSServer(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		benchRLSServer(b, grpcEngine(b, benchPolicy, nil))
	})
	b.Run("redis", func(b *testing.B) {
		srv := redistest.NewStandalone(b)
		store, err := redisstore.New(srv.Client(b), redisstore.Config{Prefix: redistest.Prefix(b)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { store.Close() })
		benchRLSServer(b, grpcEngine(b, benchPolicy, nil, storesOf(store, nil)))
	})
}

func benchRLSServer(b *testing.B, e *policy.Engine) {
	const inFlight, conns = 64, 4
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	g, err := registerGRPCServices(srv, grpcSource(e))
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	defer func() {
		srv.Stop()
		_ = g.Close()
	}()
	clients := make([]rlsv3.RateLimitServiceClient, conns)
	for i := range clients {
		cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		clients[i] = rlsv3.NewRateLimitServiceClient(cc)
	}
	ctx := context.Background()
	// Warm up the connections.
	for _, c := range clients {
		if _, err := c.ShouldRateLimit(ctx, rlsReq("bench", 1, rlsDesc("remote_address", "warm"))); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	lat := make([][]time.Duration, inFlight)
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for w := range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%conns]
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				req := rlsReq("bench", 1, rlsDesc("remote_address", "10.0."+strconv.Itoa(int(i%4096)/256)+"."+strconv.Itoa(int(i%256))))
				t0 := time.Now()
				resp, err := c.ShouldRateLimit(ctx, req)
				lat[w] = append(lat[w], time.Since(t0))
				if err != nil || resp.OverallCode != rlsv3.RateLimitResponse_OK {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatalf("a call failed: %v", err)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[min(int(p*float64(len(all))), len(all)-1)].Microseconds())
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "checks/s")
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}
