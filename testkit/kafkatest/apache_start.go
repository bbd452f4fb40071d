//go:build linux

package kafkatest

import "context"

// startApacheCluster starts a cluster of the test's own from cfg.
func startApacheCluster(ctx context.Context, cfg brokerConfig) (*apacheCluster, error) {
	return startApache(ctx, apacheConfig{nodes: cfg.nodes, extra: cfg.configs, jvmFlags: cfg.jvm})
}

// newApacheBroker wraps c, creating cfg's topics; release runs at Close.
func newApacheBroker(ctx context.Context, c *apacheCluster, release func(), cfg brokerConfig) (*Broker, error) {
	b := &Broker{be: &apacheBackend{c: c, release: release}, ac: c}
	for _, tp := range cfg.topics {
		if err := b.CreateTopicContext(ctx, tp.name, tp.partitions, nil); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}
