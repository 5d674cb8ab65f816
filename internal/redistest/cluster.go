package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// clusterNodes is the number of masters in a cluster.
	clusterNodes = 3
	// clusterSlots is the number of hash slots in Redis Cluster.
	clusterSlots = 16384
	// clusterNodeTimeout is cluster-node-timeout: how long a node must be
	// unreachable before the others flag it as failing.
	clusterNodeTimeout = 1000 * time.Millisecond
	// clusterCreateTimeout bounds redis-cli --cluster create.
	clusterCreateTimeout = 30 * time.Second
	// clusterHealthyTimeout bounds the wait for a new cluster to be healthy.
	clusterHealthyTimeout = 10 * time.Second
)

// Cluster is a Redis Cluster of three masters without replicas, each a Server
// on 127.0.0.1, created with redis-cli --cluster create. Node(0) serves slots
// 0-5460, Node(1) 5461-10922 and Node(2) 10923-16383.
//
// The nodes run with cluster-node-timeout 1000 (ms) and
// cluster-require-full-coverage no, for fault tests. While a node is down,
// commands for its slots fail (connection refused) and commands for the other
// slots keep working throughout. The others flag the dead node as failed
// about 1.5 s after it dies; with the default cluster-require-full-coverage
// yes, they would then refuse every command, for every slot, until it came
// back. There are no replicas, so there is no failover: a node's slots stay
// its own while it is down.
//
// A killed node restarted with Node(i).Restart re-reads its nodes-<port>.conf
// and rejoins with its node ID and slots, but empty. The cluster is healthy
// again once the others have cleared its failure flag and its own rejoin
// delay (cluster-node-timeout) has passed, about 2 s after Restart;
// WaitHealthy waits for that. Until then the restarted node may answer
// CLUSTERDOWN for its own slots.
//
// A Cluster is safe for concurrent use.
type Cluster struct {
	nodes  []*Server
	shared bool
	// slots[i] is the index in nodes of the node serving slot i.
	slots [clusterSlots]uint8
}

// startCluster starts three nodes, joins them with redis-cli and waits until
// the cluster is healthy.
func startCluster(serverBin, cliBin string) (_ *Cluster, err error) {
	c := &Cluster{nodes: make([]*Server, clusterNodes)}
	errs := make([]error, clusterNodes)
	var wg sync.WaitGroup
	for i := range c.nodes {
		wg.Go(func() { c.nodes[i], errs[i] = startServer(serverBin, kindClusterNode, nil) })
	}
	wg.Wait()
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), clusterCreateTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	cmd := exec.CommandContext(ctx, cliBin, args...)
	cmd.SysProcAttr = sysProcAttr()
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redistest: %s %s: %w\n%s", cliBin, strings.Join(args, " "), err, out)
	}
	if err := c.WaitHealthy(clusterHealthyTimeout); err != nil {
		return nil, err
	}
	if err := c.readSlots(); err != nil {
		return nil, err
	}
	return c, nil
}

// readSlots fills c.slots from CLUSTER SHARDS.
func (c *Cluster) readSlots() error {
	client := redis.NewClient(c.nodes[0].internalOptions())
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	shards, err := client.ClusterShards(ctx).Result()
	if err != nil {
		return fmt.Errorf("redistest: CLUSTER SHARDS: %w", err)
	}
	covered := 0
	for _, shard := range shards {
		node := -1
		for _, sn := range shard.Nodes {
			for i, n := range c.nodes {
				if sn.Role == "master" && sn.Port == int64(n.port) {
					node = i
				}
			}
		}
		if node < 0 {
			return fmt.Errorf("redistest: CLUSTER SHARDS: no known master in %+v", shard)
		}
		for _, r := range shard.Slots {
			if r.Start < 0 || r.End >= clusterSlots || r.Start > r.End {
				return fmt.Errorf("redistest: CLUSTER SHARDS: bad range %+v", r)
			}
			for slot := r.Start; slot <= r.End; slot++ {
				c.slots[slot] = uint8(node)
			}
			covered += int(r.End - r.Start + 1)
		}
	}
	if covered != clusterSlots {
		return fmt.Errorf("redistest: CLUSTER SHARDS covers %d slots, want %d", covered, clusterSlots)
	}
	return nil
}

// Addrs returns the addresses of the nodes, in the order of Node.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Node returns the i'th node, 0 <= i < 3. Node(i).Kill and Node(i).Restart
// take a node down and bring it back (see Cluster).
func (c *Cluster) Node(i int) *Server { return c.nodes[i] }

// NodeOf returns the index of the node that serves key, as Node takes it.
func (c *Cluster) NodeOf(key string) int { return int(c.slots[Slot(key)]) }

// WaitHealthy polls every node's CLUSTER INFO until all of them report
// cluster_state:ok, all 16384 slots ok and three known nodes, or timeout
// passes. It returns nil when the cluster is healthy and otherwise an error
// naming the first node that was not.
func (c *Cluster) WaitHealthy(timeout time.Duration) error {
	clients := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		clients[i] = redis.NewClient(n.internalOptions())
		defer clients[i].Close()
	}
	deadline := time.Now().Add(timeout)
	for {
		err := c.checkHealthy(clients)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster not healthy after %v: %w", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkHealthy checks each node's CLUSTER INFO once.
func (c *Cluster) checkHealthy(clients []*redis.Client) error {
	want := []string{
		"cluster_state:ok",
		fmt.Sprintf("cluster_slots_ok:%d", clusterSlots),
		fmt.Sprintf("cluster_known_nodes:%d", clusterNodes),
	}
	for i, client := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		info, err := client.ClusterInfo(ctx).Result()
		cancel()
		if err != nil {
			return fmt.Errorf("node %d (%s): CLUSTER INFO: %w", i, c.nodes[i].Addr(), err)
		}
		fields := strings.Fields(info)
		for _, w := range want {
			if !contains(fields, w) {
				return fmt.Errorf("node %d (%s): CLUSTER INFO lacks %s:\n%s", i, c.nodes[i].Addr(), w, info)
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Stop stops every node. It is idempotent. NewCluster arranges for Stop to be
// called by t.Cleanup. Stop panics on the shared cluster; Main stops it.
func (c *Cluster) Stop() {
	if c.shared {
		panic("redistest: Stop on the shared cluster; use NewCluster for tests that stop clusters")
	}
	c.stop()
}

// stop is Stop without the check that c is private.
func (c *Cluster) stop() {
	for _, n := range c.nodes {
		if n != nil {
			n.stop()
		}
	}
}

// Options returns go-redis cluster options for the cluster: go-redis's
// defaults, except a 1 s dial timeout, one dial attempt per connection
// instead of five (so that commands to a killed server fail fast), 2 s read
// and write timeouts, and no CLIENT SETINFO (which Redis 7.0 does not know). Each call returns a new
// value the caller may change.
func (c *Cluster) Options() *redis.ClusterOptions {
	return &redis.ClusterOptions{
		Addrs:           c.Addrs(),
		DialTimeout:     time.Second,
		DialerRetries:   1,
		ReadTimeout:     2 * time.Second,
		WriteTimeout:    2 * time.Second,
		DisableIdentity: true,
	}
}

// Client returns a cluster client of the cluster with Options, which
// t.Cleanup closes.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	client := redis.NewClusterClient(c.Options())
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// internalOptions are the options of the package's own short-lived clients:
// no retries, so that polling sees each failure at once.
func (s *Server) internalOptions() *redis.Options {
	o := s.Options()
	o.MaxRetries = -1
	o.PoolSize = 1
	return o
}

// Slot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the key,
// or of its hash tag (the part between the first '{' and the next '}', if
// that is not empty), modulo 16384.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % clusterSlots
}
