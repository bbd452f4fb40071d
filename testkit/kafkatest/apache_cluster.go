//go:build linux

package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apacheCluster is a running Apache Kafka cluster of combined
// broker+controller nodes on loopback, in a temporary directory that Close
// removes.
type apacheCluster struct {
	dir   string
	nodes []*apacheNode
	adm   *kadm.Client
	cl    *kgo.Client

	closeOnce sync.Once
}

// apacheConfig is what startApache needs.
type apacheConfig struct {
	nodes    int
	extra    map[string]string // server.properties overrides
	jvmFlags []string
	timeout  time.Duration // start and readiness
}

// defaultJVMFlags start a broker fast and small: tests create few
// partitions and little data.
var defaultJVMFlags = []string{"-Xms64m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss1m"}

// startApache resolves the classpath, formats and starts cfg.nodes nodes
// and waits until every broker answers metadata and the group and
// transaction coordinators can be found.
func startApache(ctx context.Context, cfg apacheConfig) (_ *apacheCluster, err error) {
	if _, err := execLookJava(); err != nil {
		return nil, err
	}
	if cfg.nodes < 1 {
		cfg.nodes = 1
	}
	if cfg.timeout == 0 {
		cfg.timeout = 2 * time.Minute
	}
	if cfg.jvmFlags == nil {
		cfg.jvmFlags = defaultJVMFlags
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	cp, err := apacheClasspath(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-kafka-")
	if err != nil {
		return nil, fmt.Errorf("kafkatest: %w", err)
	}
	c := &apacheCluster{dir: dir}
	defer func() {
		if err != nil {
			logs := c.logTail(60)
			c.close()
			err = fmt.Errorf("%w\n%s", err, logs)
		}
	}()
	ports, err := freePorts(2 * cfg.nodes)
	if err != nil {
		return nil, err
	}
	var voters []string
	for i := range cfg.nodes {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[2*i+1]))
	}
	for i := range cfg.nodes {
		nd := filepath.Join(dir, fmt.Sprintf("node%d", i+1))
		c.nodes = append(c.nodes, &apacheNode{
			id: i + 1, dir: nd, brokerPort: ports[2*i], ctrlPort: ports[2*i+1],
			props:     nodeProperties(i+1, nd, ports[2*i], ports[2*i+1], strings.Join(voters, ","), cfg.nodes, cfg.extra),
			classpath: cp, jvmFlags: cfg.jvmFlags,
		})
	}
	clusterID := newClusterID()
	errs := make(chan error, len(c.nodes))
	for _, n := range c.nodes {
		go func() { errs <- n.prepare(ctx, clusterID) }()
	}
	for range c.nodes {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		return nil, err
	}
	for _, n := range c.nodes {
		if err := n.start(); err != nil {
			return nil, err
		}
	}
	// Metadata min age at its floor: the admin client outlives tests that
	// delete and re-create topics of the same names, and kgo would answer
	// from metadata cached before that for up to the default 5 s.
	c.cl, err = kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.RetryTimeout(5*time.Second), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("kafkatest: admin client: %w", err)
	}
	c.adm = kadm.NewClient(c.cl)
	if err := c.waitReady(ctx, cfg.nodes); err != nil {
		return nil, err
	}
	return c, nil
}

func execLookJava() (string, error) {
	p := javaPath()
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if lp, err := exec.LookPath(p); err == nil {
		return lp, nil
	}
	return "", fmt.Errorf("kafkatest: Apache Kafka needs Java 17 or later (%q not found: install a JDK or set JAVA_HOME)", p)
}

// waitReady polls until want brokers are registered and the group and
// transaction coordinators answer, which also creates their topics.
func (c *apacheCluster) waitReady(ctx context.Context, want int) error {
	var last error
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		last = c.ready(ctx, want)
		if last == nil {
			return nil
		}
		for _, n := range c.nodes {
			select {
			case <-n.exited():
				return fmt.Errorf("kafkatest: node %d: %w", n.id, errNodeExited)
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkatest: Apache Kafka not ready: %w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func (c *apacheCluster) ready(ctx context.Context, want int) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// A metadata request of its own: kadm's BrokerMetadata answers from
	// the client's cache, which an idle admin client never refreshes.
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	m, err := req.RequestWith(rctx, c.cl)
	if err != nil {
		return err
	}
	if len(m.Brokers) < want || m.ControllerID < 0 {
		ids := make([]int32, 0, len(m.Brokers))
		for _, b := range m.Brokers {
			ids = append(ids, b.NodeID)
		}
		return fmt.Errorf("%d of %d brokers registered (%v), controller %d", len(m.Brokers), want, ids, m.ControllerID)
	}
	for _, r := range c.adm.FindGroupCoordinators(rctx, "sluice-ready") {
		if r.Err != nil {
			return fmt.Errorf("group coordinator: %w", r.Err)
		}
	}
	for _, r := range c.adm.FindTxnCoordinators(rctx, "sluice-ready") {
		if r.Err != nil {
			return fmt.Errorf("transaction coordinator: %w", r.Err)
		}
	}
	return nil
}

func (c *apacheCluster) addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.addr()
	}
	return out
}

// logTail is the tail of every node's log.
func (c *apacheCluster) logTail(lines int) string {
	var b strings.Builder
	for _, n := range c.nodes {
		b.WriteString(n.logTail(lines))
	}
	return b.String()
}

// close kills every node and removes the directory. Graceful shutdown buys
// nothing for a throwaway cluster.
func (c *apacheCluster) close() {
	c.closeOnce.Do(func() {
		if c.cl != nil {
			c.cl.Close()
		}
		var wg sync.WaitGroup
		for _, n := range c.nodes {
			wg.Go(func() { n.stop(false, 0) })
		}
		wg.Wait()
		if os.Getenv("SLUICE_KAFKA_KEEP") == "" {
			_ = os.RemoveAll(c.dir)
		}
	})
}

// freePorts reserves n loopback ports by listening on port 0 and closing.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("kafkatest: free port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// newClusterID is a random KRaft cluster id: 16 bytes, URL-safe base64
// without padding, as kafka-storage random-uuid prints. Like Kafka's
// Uuid.randomUuid it never begins with '-', which kafka-storage format
// would take for an option.
func newClusterID() string {
	for {
		var b [16]byte
		_, _ = rand.Read(b[:])
		if id := base64.RawURLEncoding.EncodeToString(b[:]); !strings.HasPrefix(id, "-") {
			return id
		}
	}
}

// waitNodeAnswers polls until node n answers a Metadata request sent to it
// and lists every node, or n's process ended.
func (c *apacheCluster) waitNodeAnswers(ctx context.Context, n *apacheNode) error {
	var last error
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		m, err := req.RequestWith(rctx, c.cl.Broker(n.id))
		cancel()
		switch {
		case err != nil:
			last = err
		case len(m.Brokers) < len(c.nodes):
			last = fmt.Errorf("it knows %d of %d brokers", len(m.Brokers), len(c.nodes))
		default:
			return nil
		}
		select {
		case <-n.exited():
			return fmt.Errorf("kafkatest: node %d: %w", n.id, errNodeExited)
		case <-ctx.Done():
			return fmt.Errorf("kafkatest: node %d does not answer: %w (last: %v)", n.id, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
