// Package redistest starts real redis-server processes for tests: a
// standalone server or a three-master Redis Cluster, on free ports of
// 127.0.0.1, from the redis-server and redis-cli binaries on PATH. It never
// mocks Redis.
//
// # Setup
//
// A package whose tests use Redis calls Main from its TestMain, so that the
// servers it starts are stopped when the test binary exits:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
//
// On Linux every server is also started with Pdeathsig SIGKILL, so none
// outlives a test binary that crashes.
//
// # Which one should I use?
//
// Standalone and SharedCluster return servers shared by all tests of the test
// binary, started on first use: use them for every test that does not kill
// anything. They cost nothing after the first call (a cluster takes about
// two seconds to start).
//
// NewStandalone and NewCluster start private servers that t.Cleanup stops:
// use them for fault tests, which Kill and Restart a server or a cluster node
// (Server.Kill, Server.Restart, Cluster.Node, Cluster.WaitHealthy), or
// freeze one as a hung Redis would be (Server.Pause, Server.Resume).
//
// NewSentinel starts a master and a Sentinel monitoring it, for tests of
// go-redis's failover client (redis.NewFailoverClient).
//
// # Keys
//
// Tests sharing a server put their keys under Prefix(t), a random
// "admit:test:<16 hex>:", and never FLUSHDB or FLUSHALL: only a private
// server may be flushed. Prefix contains no hash tag, so in a cluster keys
// under one prefix spread over all nodes; Cluster.NodeOf tells which node
// serves a key.
//
// # When Redis is missing
//
// When redis-server (or, for a cluster, redis-cli) is not on PATH, the
// helpers skip the test with a message saying how to install it (apt-get
// install redis-server; scripts/test does it when it can). With the
// environment variable ADMIT_REQUIRE_REDIS=1, as in CI, they fail the test
// instead.
package redistest
