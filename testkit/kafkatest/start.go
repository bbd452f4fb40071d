package kafkatest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// StartBroker starts a kfake cluster on 127.0.0.1 with random ports. The
// caller must Close it. Tests use [NewBroker], which also runs on Apache
// Kafka when asked to.
func StartBroker(opts ...BrokerOption) (*Broker, error) {
	return startKfake(newBrokerConfig(opts))
}

// StartApache starts an Apache Kafka cluster of its own on loopback (the
// version [ApacheKafkaVersion] names), waits until it answers and creates
// the topics of [WithTopic]. The first call on a machine resolves the
// broker's jars with Maven (cached afterwards). It needs Java 17+ and
// Maven in PATH (or JAVA_HOME); it runs on Linux. The caller must Close
// the Broker; its processes are killed when the calling process ends,
// however it ends.
func StartApache(ctx context.Context, opts ...BrokerOption) (*Broker, error) {
	cfg := newBrokerConfig(opts)
	if cfg.nodes < 1 {
		return nil, fmt.Errorf("kafkatest: WithNodes(%d): need at least one node", cfg.nodes)
	}
	c, err := startApacheCluster(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return newApacheBroker(ctx, c, c.close, cfg)
}

// Start starts a broker of the given kind, like [StartBroker] or
// [StartApache].
func Start(ctx context.Context, kind Kind, opts ...BrokerOption) (*Broker, error) {
	if kind == Apache {
		return StartApache(ctx, opts...)
	}
	return StartBroker(opts...)
}

// NewBroker starts a broker for a test and closes it at t.Cleanup. It is a
// kfake cluster unless the environment variable [EnvBroker] says
// "apache"; then it is Apache Kafka: a single-node cluster shared by the
// package's tests one at a time (reset to no topics, groups or group
// configs between them; the package's TestMain wraps m in [Pooled]), or
// one of the test's own with [WithNodes] above 1 or [WithBrokerConfig].
// A test that closes the Broker itself ends its cluster, shared or not,
// as it does kfake's. When the test fails, the tail of Apache Kafka's log
// is in its output.
func NewBroker(t testing.TB, opts ...BrokerOption) *Broker {
	t.Helper()
	kind, err := KindFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if kind == Kfake {
		b := NewKfake(t, opts...)
		b.kc = nil // Cluster is for NewKfake's brokers only
		return b
	}
	cfg := newBrokerConfig(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var b *Broker
	var ended atomic.Bool // the test is over: its pooled cluster goes back
	if cfg.nodes == 1 && len(cfg.configs) == 0 && cfg.jvm == nil {
		c, err := borrowApache(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err = newApacheBroker(ctx, c, func() {
			// A test that closes its broker wants it gone, as a
			// closed kfake is: nothing at its addresses, which no
			// other test may get while this one still knows them.
			if ended.Load() {
				giveBack(c)
			} else {
				discard(c)
			}
		}, cfg)
		if err != nil {
			t.Fatal(err)
		}
	} else {
		b, err = StartApache(ctx, opts...)
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ended.Store(true)
		if t.Failed() {
			t.Logf("kafkatest: Apache Kafka's log:\n%s", b.LogTail(80))
		}
		b.Close()
	})
	return b
}

// NewKfake starts a kfake cluster for a test, whatever [EnvBroker] says,
// and closes it at t.Cleanup. Tests that inject faults with
// [Broker.Cluster] use it.
func NewKfake(t testing.TB, opts ...BrokerOption) *Broker {
	t.Helper()
	b, err := startKfake(newBrokerConfig(opts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func startKfake(cfg brokerConfig) (*Broker, error) {
	if cfg.nodes < 1 {
		return nil, fmt.Errorf("kafkatest: WithNodes(%d): need at least one node", cfg.nodes)
	}
	configs := map[string]string{
		// KIP-848 groups: members learn about assignment changes on
		// their next heartbeat; Kafka's 5s default makes tests slow.
		"group.consumer.heartbeat.interval.ms": "250",
	}
	for k, v := range cfg.configs {
		configs[k] = v
	}
	kopts := []kfake.Opt{
		kfake.NumBrokers(cfg.nodes),
		// librdkafka's default session timeout is 45s; tests lower it,
		// so allow down to one second.
		kfake.GroupMinSessionTimeout(time.Second),
		kfake.BrokerConfigs(configs),
	}
	for _, tp := range cfg.topics {
		kopts = append(kopts, kfake.SeedTopics(tp.partitions, tp.name))
	}
	kopts = append(kopts, cfg.kopts...)
	c, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: start broker: %w", err)
	}
	return &Broker{be: kfakeBackend{c}, kc: c}, nil
}
