package bench

// Envoy's rate-limit service: admit's server (package server, Envoy's
// RateLimitService over a policy engine) against envoyproxy/ratelimit,
// the reference implementation, on the same Redis and the same load.
//
//   - BenchmarkRLS/admit-redis: admit's RLS in this process, with the
//     same envoyproxy/ratelimit configuration file (fixed windows per
//     value, policy.Parse) kept in Redis.
//   - BenchmarkRLS/envoyproxy-ratelimit: envoyproxy/ratelimit's own
//     server, installed with `go install
//     github.com/envoyproxy/ratelimit/src/service_cmd@<ratelimitVersion>`
//     into a directory under os.TempDir() (kept between runs), run as a
//     child process with its defaults but for: the Redis address (TCP),
//     stats off (DISABLE_STATS: without statsd it would log every timer to
//     stdout), logs at ERROR, the configuration directory, ports on
//     127.0.0.1.
//   - BenchmarkRLS/admit-serve-redis: the `admit serve` binary (built from
//     this checkout into a temporary directory) as a process of its own,
//     as envoyproxy/ratelimit's is, with the same configuration file and
//     --redis. Two Go runtimes of GOMAXPROCS 2 then share the 2 cores with
//     the driver's, as they do for envoyproxy/ratelimit.
//   - BenchmarkRLS/admit-memory: admit's RLS on its in-memory store, for
//     reference.
//   - BenchmarkRLS/grpc-empty: a ShouldRateLimit handler that answers OK
//     at once, with admit serve's gRPC options, in this process: the
//     ceiling that grpc-go and the driver leave to any server on this
//     machine.
//
// The load driver is the same for all: 64 ShouldRateLimit calls in flight
// over 4 HTTP/2 connections (as Envoy's workers hold), one descriptor per
// call (remote_address, 4096 values in turn), every call admitted (10^9
// per second). It reports checks/s and the p50 and p99 latency of a call.
// The driver shares the machine with the servers (and, for admit, its
// process), so the figures are of a machine this size, not of a server
// alone. The benchmark skips under -short (the install takes a minute the
// first time) and when go, redis-server or the install are missing.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/policy/backends"
	"github.com/admit-go/admit/redisstore"
	"github.com/admit-go/admit/server"
	"github.com/redis/go-redis/v9"
)

// ratelimitVersion is the version of envoyproxy/ratelimit the benchmark
// installs: the module has no tagged release on the module proxy, so this
// is the pseudo-version the proxy serves as @latest.
const ratelimitVersion = "v1.4.1-0.20260122083618-3fb702589d36"

// rlsConfig is the configuration both servers run: envoyproxy/ratelimit's
// format, one fixed window per client address.
const rlsConfig = `domain: bench
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 1000000000
`

func BenchmarkRLS(b *testing.B) {
	if testing.Short() {
		b.Skip("installs and runs envoyproxy/ratelimit; not under -short")
	}
	b.Run("grpc-empty", func(b *testing.B) {
		benchRLS(b, emptyRLS(b))
	})
	b.Run("admit-memory", func(b *testing.B) {
		benchRLS(b, admitRLS(b, nil))
	})
	b.Run("admit-redis", func(b *testing.B) {
		benchRLS(b, admitRLS(b, redisClient(b)))
	})
	b.Run("admit-serve-redis", func(b *testing.B) {
		target, _ := admitServe(b, rlsConfig, true)
		benchRLS(b, target)
	})
	b.Run("envoyproxy-ratelimit", func(b *testing.B) {
		target, _ := envoyRatelimit(b, rlsConfig)
		benchRLS(b, target)
	})
}

// emptyRLS serves, on 127.0.0.1, a ShouldRateLimit that answers OK at once
// and returns its address.
func emptyRLS(b *testing.B) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer(append(server.GRPCServerOptions(), grpc.NumStreamWorkers(uint32(32*runtime.GOMAXPROCS(0))))...)
	rlsv3.RegisterRateLimitServiceServer(srv, emptyHandler{})
	go func() { _ = srv.Serve(lis) }()
	b.Cleanup(srv.Stop)
	return lis.Addr().String()
}

type emptyHandler struct {
	rlsv3.UnimplementedRateLimitServiceServer
}

func (emptyHandler) ShouldRateLimit(context.Context, *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	return &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK}, nil
}

// buildAdmit builds the admit command of this checkout once per run and
// returns the binary's path.
var buildAdmit = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "admit-bench-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "admit")
	// Built in the main module, whose go.sum has every dependency of the
	// command (this module's lists only what its own packages import).
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/admit")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build admit: %v\n%s", err, out)
	}
	return bin, nil
})

// admitServe runs `admit serve` with the policy config, on the
// benchmark's Redis if onRedis (else in memory), and returns its gRPC
// address once it answers, and its process id; extra are more flags.
func admitServe(b *testing.B, config string, onRedis bool, extra ...string) (string, int) {
	bin, err := buildAdmit()
	if err != nil {
		b.Skip(err)
	}
	file := filepath.Join(b.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		b.Fatal(err)
	}
	grpcAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(b)))
	args := []string{"serve", "--config", file,
		"--grpc-addr", grpcAddr, "--http-addr", net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(b))),
		"--reload-interval", "0", "--log-level", "error"}
	if onRedis {
		addr, err := redisAddr()
		if err != nil {
			b.Skip(err)
		}
		args = append(args, "--redis", "redis://"+addr,
			"--key-prefix", "bench-serve:"+strconv.FormatInt(time.Now().UnixNano(), 36)+":")
	}
	cmd := exec.Command(bin, append(args, extra...)...)
	startChild(b, cmd, "admit serve")
	return waitRLS(b, grpcAddr, "admit serve"), cmd.Process.Pid
}

// admitRLS serves admit's RLS on 127.0.0.1 and returns its address: on
// Redis through c, or in memory for a nil c.
func admitRLS(b *testing.B, c redis.UniversalClient) string {
	p, err := policy.Parse("config.yaml", []byte(rlsConfig))
	if err != nil {
		b.Fatal(err)
	}
	var store *redisstore.Store
	if c != nil {
		store, err = redisstore.New(c, redisstore.Config{Prefix: "bench-rls:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { store.Close() })
	}
	var cfg policy.Config
	cfg.Backends, cfg.DefaultStore = backends.Stores(store)
	e, err := policy.NewEngine(p, cfg)
	if err != nil {
		b.Fatal(err)
	}
	var src server.Engines
	src.Set(e)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	// The options of admit serve's gRPC server (server.Server).
	srv := grpc.NewServer(append(server.GRPCServerOptions(), grpc.NumStreamWorkers(uint32(32*runtime.GOMAXPROCS(0))))...)
	g, err := server.RegisterGRPC(srv, &src, server.Config{})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	b.Cleanup(func() {
		srv.Stop()
		_ = g.Close()
		_ = e.Close()
	})
	return lis.Addr().String()
}

// installRatelimit installs envoyproxy/ratelimit's server once per
// machine (under os.TempDir()) and returns the binary's path.
var installRatelimit = sync.OnceValues(func() (string, error) {
	gobin := filepath.Join(os.TempDir(), "admit-bench-ratelimit-"+ratelimitVersion)
	bin := filepath.Join(gobin, "service_cmd")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(goCmd, "install", "github.com/envoyproxy/ratelimit/src/service_cmd@"+ratelimitVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=", "GOWORK=off")
	cmd.Dir = os.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install envoyproxy/ratelimit %s: %v\n%s", ratelimitVersion, err, out)
	}
	return bin, nil
})

// freePort returns a port free on 127.0.0.1 now.
func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// envoyRatelimit runs envoyproxy/ratelimit with the configuration file
// config on the benchmark's Redis and returns its gRPC address once it
// answers, and its process id.
func envoyRatelimit(b *testing.B, config string) (string, int) {
	addr, err := redisAddr()
	if err != nil {
		b.Skip(err)
	}
	bin, err := installRatelimit()
	if err != nil {
		b.Skip(err)
	}
	root := b.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "ratelimit", "config"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "ratelimit", "config", "config.yaml"), []byte(config), 0o644); err != nil {
		b.Fatal(err)
	}
	grpcPort := freePort(b)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"DISABLE_STATS=true", "USE_STATSD=false", "LOG_LEVEL=error", "BACKEND_TYPE=redis",
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+addr,
		"RUNTIME_ROOT="+root, "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false",
		"HOST=127.0.0.1", "PORT="+strconv.Itoa(freePort(b)),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT="+strconv.Itoa(freePort(b)),
		"GRPC_HOST=127.0.0.1", "GRPC_PORT="+strconv.Itoa(grpcPort))
	startChild(b, cmd, "envoyproxy/ratelimit")
	return waitRLS(b, net.JoinHostPort("127.0.0.1", strconv.Itoa(grpcPort)), "envoyproxy/ratelimit"), cmd.Process.Pid
}

// startChild starts the server cmd, named name, as a child that dies with
// the benchmark and is killed at its end, its stderr kept by childLog.
func startChild(b *testing.B, cmd *exec.Cmd, name string) {
	cmd.Stderr = childLog(b, name)
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
}

// childLog returns a writer for a child process's stderr, which the
// benchmark prints only if it fails (envoyproxy/ratelimit logs its start
// at level info whatever LOG_LEVEL says, which would interleave with the
// benchmark's lines).
func childLog(b *testing.B, name string) io.Writer {
	w := &lockedBuffer{}
	b.Cleanup(func() {
		if b.Failed() {
			b.Logf("%s's stderr:\n%s", name, w.String())
		}
	})
	return w
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitRLS waits until the RLS named name at target answers with a limit,
// and returns target.
func waitRLS(b *testing.B, target, name string) string {
	cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	c := rlsv3.NewRateLimitServiceClient(cc)
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := c.ShouldRateLimit(ctx, rlsRequest("ready"))
		cancel()
		if err == nil && resp.OverallCode == rlsv3.RateLimitResponse_OK && resp.Statuses[0].CurrentLimit != nil {
			return target
		}
		if time.Since(start) > 30*time.Second {
			b.Fatalf("%s did not answer on %s: %v, %v", name, target, resp, err)
		}
	}
}

func rlsRequest(addr string) *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: "bench", HitsAddend: 1, Descriptors: []*ratelimitv3.RateLimitDescriptor{{
		Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: addr}},
	}}}
}

// benchRLS drives the RLS at target: 64 calls in flight over 4
// connections, every call admitted, 4096 client addresses in turn.
func benchRLS(b *testing.B, target string) {
	addrs := make([]string, 4096)
	for i := range addrs {
		addrs[i] = "10.0." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256)
	}
	driveRLS(b, target, addrs, nil, false)
}

// driveRLS makes b.N ShouldRateLimit calls to the RLS at target, 64 in
// flight over 4 connections, and reports checks/s and the p50 and p99 of
// a call. Call i asks about keys[i mod len(keys)] when seq is nil, else
// each caller walks seq from its own offset and asks about keys[seq[...]].
// A refusal fails the run unless refusals is true. It returns the run's
// duration and the calls admitted.
func driveRLS(b *testing.B, target string, keys []string, seq []int32, refusals bool) (time.Duration, int64) {
	const inFlight, conns = 64, 4
	clients := make([]rlsv3.RateLimitServiceClient, conns)
	for i := range clients {
		cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cc.Close() })
		clients[i] = rlsv3.NewRateLimitServiceClient(cc)
		if _, err := clients[i].ShouldRateLimit(context.Background(), rlsRequest("warm")); err != nil {
			b.Fatal(err)
		}
	}
	var (
		next, admitted atomic.Int64
		failed         atomic.Value
		wg             sync.WaitGroup
	)
	lat := make([][]time.Duration, inFlight)
	ctx := context.Background()
	runtime.GC()
	b.ResetTimer()
	start := time.Now()
	for w := range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%conns]
			off := int64(w) * int64(len(seq)) / inFlight
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				key := keys[i%int64(len(keys))]
				if seq != nil {
					key = keys[seq[(off+i)%int64(len(seq))]]
				}
				t0 := time.Now()
				resp, err := c.ShouldRateLimit(ctx, rlsRequest(key))
				lat[w] = append(lat[w], time.Since(t0))
				switch {
				case err == nil && resp.OverallCode == rlsv3.RateLimitResponse_OK:
					admitted.Add(1)
				case err == nil && refusals && resp.OverallCode == rlsv3.RateLimitResponse_OVER_LIMIT:
				default:
					failed.Store(fmt.Sprint(resp, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failed.Load(); f != nil {
		b.Fatalf("a call failed: %v", f)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	at := func(p float64) float64 {
		return float64(all[min(int(p*float64(len(all))), len(all)-1)].Microseconds())
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "checks/s")
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	return elapsed, admitted.Load()
}
