package kafkatest

import (
	"maps"

	"github.com/twmb/franz-go/pkg/kfake"
)

// BrokerOption configures the broker that [NewBroker], [NewKfake],
// [StartBroker] and [StartApache] start.
type BrokerOption func(*brokerConfig)

type brokerConfig struct {
	nodes   int
	topics  []topicSpec
	kopts   []kfake.Opt
	configs map[string]string
	jvm     []string
}

type topicSpec struct {
	name       string
	partitions int32
}

func newBrokerConfig(opts []BrokerOption) brokerConfig {
	cfg := brokerConfig{nodes: 1}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// WithNodes sets the number of broker nodes in the cluster (default 1).
// Partition leadership is spread over the nodes. On Apache Kafka every node
// is a broker and a KRaft controller, internal topics are replicated to
// min(nodes, 3) nodes, and the cluster is the test's own (not shared).
func WithNodes(n int) BrokerOption {
	return func(c *brokerConfig) { c.nodes = n }
}

// WithTopic creates topic with the given number of partitions when the
// broker starts.
func WithTopic(topic string, partitions int32) BrokerOption {
	return func(c *brokerConfig) { c.topics = append(c.topics, topicSpec{topic, partitions}) }
}

// WithBrokerConfig sets broker configuration (Kafka's names, such as
// "group.share.record.lock.duration.ms") on either broker: kfake takes
// them as kfake.BrokerConfigs; Apache Kafka writes them into every node's
// server.properties, and the cluster is then the test's own (not shared).
func WithBrokerConfig(configs map[string]string) BrokerOption {
	return func(c *brokerConfig) {
		if c.configs == nil {
			c.configs = map[string]string{}
		}
		maps.Copy(c.configs, configs)
	}
}

// WithKfakeOptions passes raw kfake options through, for what the other
// options do not cover (listeners, SASL, TLS, ...). Apache Kafka ignores
// them: a test that depends on one belongs on [NewKfake].
func WithKfakeOptions(opts ...kfake.Opt) BrokerOption {
	return func(c *brokerConfig) { c.kopts = append(c.kopts, opts...) }
}

// WithJVMFlags replaces the JVM flags of Apache Kafka's processes. The
// default starts fast and small (client JIT only, serial GC, 768 MiB heap
// at most), which suits tests; a benchmark wants the server JIT, for
// example "-Xmx2g", "-XX:+UseG1GC". kfake ignores them.
func WithJVMFlags(flags ...string) BrokerOption {
	return func(c *brokerConfig) { c.jvm = flags }
}
