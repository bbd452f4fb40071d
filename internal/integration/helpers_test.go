package integration

import (
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// librdkafka's threads are C threads, invisible to goleak; the Go side of
// every client stops on Close. No test here provokes a fatal client error
// (the one path on which the Kafka source leaks a goroutine).
func TestMain(m *testing.M) { goleak.VerifyTestMain(kafkatest.Pooled(m)) }

// wait bounds every wait in this package; it only fires when stuck.
const wait = 60 * time.Second

// newSource returns a Kafka source for group/topic with test timings
// (fast heartbeats and commits); overrides are applied last.
func newSource(t testing.TB, b *kafkatest.Broker, group, topic string, overrides map[string]any) *source.Source {
	t.Helper()
	ov := map[string]any{
		"heartbeat.interval.ms": 100,
		"session.timeout.ms":    6000,
	}
	maps.Copy(ov, overrides)
	return sourceOf(t, b, group, topic, source.Config{GroupConfig: sluice.GroupConfig{CommitInterval: 50 * time.Millisecond}, Overrides: ov})
}

// fillTopic creates topic on b with parts partitions, writes
// perPartition records of 16 bytes to each, and returns how many it
// wrote and the partitions' high watermarks.
func fillTopic(t testing.TB, b *kafkatest.Broker, topic string, parts int32, perPartition int) (total int, hw map[int32]int64) {
	t.Helper()
	b.CreateTopic(t, topic, parts)
	total = b.Fill(t, topic, perPartition, 16)
	return total, b.HighWatermarks(t, topic)
}

// sourceOf returns a Kafka source of cfg for group/topic on b, logging
// with kafkatest.Logger(t); an error fails t.
func sourceOf(t testing.TB, b *kafkatest.Broker, group, topic string, cfg source.Config) *source.Source {
	t.Helper()
	cfg.GroupConfig = groupOn(t, b, group, topic, cfg.GroupConfig)
	return mustNew(t, source.NewSource, cfg)
}

// franzSourceOf is sourceOf for a franz source.
func franzSourceOf(t testing.TB, b *kafkatest.Broker, group, topic string, cfg franz.Config) *franz.Source {
	t.Helper()
	cfg.GroupConfig = groupOn(t, b, group, topic, cfg.GroupConfig)
	return mustNew(t, franz.NewSource, cfg)
}

// groupOn returns g for group on topic of b, logging with
// kafkatest.Logger(t).
func groupOn(t testing.TB, b *kafkatest.Broker, group, topic string, g sluice.GroupConfig) sluice.GroupConfig {
	g.Brokers, g.Group, g.Topics, g.Logger = b.Addrs(), group, []string{topic}, kafkatest.Logger(t)
	return g
}

// mustNew returns newFn(cfg); an error fails t.
func mustNew[C, T any](t testing.TB, newFn func(C) (T, error), cfg C) T {
	t.Helper()
	v, err := newFn(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// newFranzSource returns a franz source for group/topic with test timings
// (fast heartbeats and commits); opts are applied after them.
func newFranzSource(t testing.TB, b *kafkatest.Broker, group, topic string, opts ...kgo.Opt) *franz.Source {
	t.Helper()
	return newFranzSourceEvery(t, b, group, topic, 50*time.Millisecond, opts...)
}

// newFranzSourceEvery is newFranzSource committing every interval.
func newFranzSourceEvery(t testing.TB, b *kafkatest.Broker, group, topic string, every time.Duration, opts ...kgo.Opt) *franz.Source {
	t.Helper()
	return franzSourceOf(t, b, group, topic, franz.Config{GroupConfig: sluice.GroupConfig{CommitInterval: every},
		Opts: append([]kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(6 * time.Second)}, opts...)})
}

// kafkaClient returns a kgo client of b's cluster for the requests a test
// makes itself; the caller closes it.
func kafkaClient(t testing.TB, b *kafkatest.Broker) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// admin returns b's admin client (b closes it).
func admin(t testing.TB, b *kafkatest.Broker) *kadm.Client {
	t.Helper()
	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	return adm
}

// consumer is one pipeline.Run in the background (testkit.Start), named
// in failures.
type consumer struct {
	name string
	*testkit.Running
}

func startConsumer(t testing.TB, name string, src sluice.Source, build pipeline.Builder, opts ...pipeline.Option) *consumer {
	t.Helper()
	return &consumer{name: name, Running: testkit.Start(t, src, build, opts...)}
}

// stop cancels the consumer (graceful shutdown) and fails t unless Run
// returns nil within stopBound.
func (c *consumer) stop(t testing.TB) {
	t.Helper()
	if _, err := c.stopTimed(t); err != nil {
		t.Fatalf("consumer %s: Run = %v, want nil", c.name, err)
	}
}

// stopTimed cancels the consumer and returns how long Run took to return,
// and its error. It fails t, with every goroutine's stack as it was at
// stopBound, if Run does not return within stopBound.
func (c *consumer) stopTimed(t testing.TB) (time.Duration, error) {
	t.Helper()
	var hung atomic.Pointer[string]
	dump := time.AfterFunc(stopBound, func() {
		s := stacks()
		hung.Store(&s)
	})
	began := time.Now()
	err := c.Stop(t)
	took := time.Since(began)
	dump.Stop()
	if took > stopBound {
		s := hung.Load()
		if s == nil {
			s = new(string)
		}
		t.Fatalf("consumer %s: Run returned %v after its cancellation, not within %v; goroutines at %v:\n%s", c.name, took, stopBound, stopBound, *s)
	}
	return took, err
}

// stillRunning fails t if c's Run returned.
func (c *consumer) stillRunning(t testing.TB, during string) {
	t.Helper()
	select {
	case <-c.Done():
		t.Fatalf("consumer %s: Run returned during %s: %v", c.name, during, c.Err())
	default:
	}
}

// waitFor polls cond every 10ms until it holds, failing t after wait or as
// soon as one of the consumers' Run returns.
func waitFor(t testing.TB, what string, cond func() bool, cs ...*consumer) {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		for _, c := range cs {
			select {
			case <-c.Done():
				t.Fatalf("waiting for %s: consumer %s stopped: %v", what, c.name, c.Err())
			default:
			}
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("waiting for %s: not within %v", what, wait)
		}
	}
}

// offsets counts how often each offset of each partition was processed,
// lock-free: one counter per offset, sized by the high watermarks.
type offsets struct {
	n     map[int32][]atomic.Int32
	total atomic.Int64
}

func newOffsets(hw map[int32]int64) *offsets {
	o := &offsets{n: make(map[int32][]atomic.Int32, len(hw))}
	for p, h := range hw {
		o.n[p] = make([]atomic.Int32, h)
	}
	return o
}

// add counts one processing of p@off and returns how many times it was
// processed so far.
func (o *offsets) add(p int32, off int64) int32 {
	o.total.Add(1)
	return o.n[p][off].Add(1)
}

// check fails t unless every offset was processed at least once, and
// returns how many processings were duplicates.
func (o *offsets) check(t testing.TB) (dups int) {
	t.Helper()
	missing := 0
	for p, cs := range o.n {
		for off := range cs {
			switch n := cs[off].Load(); {
			case n == 0:
				if missing < 10 {
					t.Errorf("partition %d offset %d never processed", p, off)
				}
				missing++
			case n > 1:
				dups += int(n - 1)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d offsets never processed", missing)
	}
	return dups
}

// groupObserver counts the assignment events of one consumer.
type groupObserver struct {
	assigned, revoked, lost, paused atomic.Int64
	mu                              sync.Mutex
	owned                           map[int32]bool
}

func newGroupObserver() *groupObserver { return &groupObserver{owned: map[int32]bool{}} }

func (o *groupObserver) OnPartitionAssigned(tp sluice.TopicPartition) {
	o.assigned.Add(1)
	o.mu.Lock()
	o.owned[tp.Partition] = true
	o.mu.Unlock()
}

func (o *groupObserver) OnPartitionRevoked(tp sluice.TopicPartition, _ time.Duration, _ bool) {
	o.revoked.Add(1)
	o.mu.Lock()
	delete(o.owned, tp.Partition)
	o.mu.Unlock()
}

func (o *groupObserver) OnPartitionLost(tp sluice.TopicPartition) {
	o.lost.Add(1)
	o.mu.Lock()
	delete(o.owned, tp.Partition)
	o.mu.Unlock()
}

func (o *groupObserver) OnPartitionPaused(sluice.TopicPartition) { o.paused.Add(1) }

func (o *groupObserver) owns() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.owned)
}
