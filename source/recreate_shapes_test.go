package source_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The scenarios below recreate topic "orders" (group "g") in shapes the
// basic scenario (kafkadriver.TopicRecreated) leaves out: another
// partition count, two recreations in a row, a record of the old topic
// still in flight, and exactly-once. Each wants every record of the new
// topic delivered exactly once from its start, and the group's commit of
// the new topic exactly what was processed of it.

// As TestTopicRecreatedLonger, exactly-once: a transactional producer is
// bound to the source, so each commit is a transaction (with no output:
// the offsets are committed plainly after the empty transaction).
func TestExactlyOnceTopicRecreatedLonger(t *testing.T) {
	b := kafkatest.NewBroker(t)
	src := shapeSource(t, b, nil)
	p, err := confluent.NewTransactionalProducer(src, confluent.TransactionalConfig{
		ProducerConfig:  confluent.ProducerConfig{Brokers: b.Addrs()},
		TransactionalID: "recreate-eos-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	kafkadriver.TopicRecreated(t, b, src, 7)
}

// A topic of 2 partitions recreated with 1, which gets more records than
// the old partition 0 had.
func TestTopicRecreatedWithFewerPartitions(t *testing.T) {
	b := kafkatest.NewBroker(t)
	recreateShape(t, b, shapeSource(t, b, nil), 2, 1, 1, map[int32]int{0: 7})
}

// A topic of 1 partition recreated with 3, partition 0 getting more
// records than the old one had.
func TestTopicRecreatedWithMorePartitions(t *testing.T) {
	b := kafkatest.NewBroker(t)
	recreateShape(t, b, shapeSource(t, b, nil), 1, 3, 1, map[int32]int{0: 7, 1: 2, 2: 1})
}

// A topic deleted and recreated twice in a row before any record of the
// new topic is produced.
func TestTopicRecreatedTwice(t *testing.T) {
	b := kafkatest.NewBroker(t)
	recreateShape(t, b, shapeSource(t, b, nil), 1, 1, 2, map[int32]int{0: 7})
}

// As TestTopicRecreatedWithMorePartitions with KIP-848.
func TestTopicRecreatedWithMorePartitionsKIP848(t *testing.T) {
	b := kafkatest.NewBroker(t)
	recreateShape(t, b, shapeSource(t, b, map[string]any{"group.protocol": "consumer"}), 1, 3, 1, map[int32]int{0: 7, 1: 2, 2: 1})
}

func shapeSource(t *testing.T, b *kafkatest.Broker, overrides map[string]any) *source.Source {
	t.Helper()
	ov := map[string]any{"heartbeat.interval.ms": 100, "session.timeout.ms": 6000}
	if overrides["group.protocol"] == "consumer" {
		ov = map[string]any{}
	}
	maps.Copy(ov, overrides)
	src, err := source.NewSource(source.Config{
		Brokers:        b.Addrs(),
		Group:          "g",
		Topics:         []string{"orders"},
		CommitInterval: 50 * time.Millisecond,
		Logger:         kafkatest.Logger(t),
		Overrides:      ov,
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// recreateShape consumes 5 records of each of oldParts partitions of
// "orders", waits for their commit, recreates the topic times times (the
// last with newParts partitions), produces want[p] records to each
// partition p of the new topic and wants each delivered once, then the
// group's commit of the new topic exactly want.
func recreateShape(t *testing.T, b *kafkatest.Broker, src sluice.Source, oldParts, newParts int32, times int, want map[int32]int) {
	t.Helper()
	const topic, group = "orders", "g"
	b.CreateTopic(t, topic, oldParts)
	oldWant := map[string]bool{}
	oldCommit := map[int32]int64{}
	var old []sluice.Record
	for p := range oldParts {
		for i := range 5 {
			old = append(old, sluice.Record{Partition: p, Value: fmt.Appendf(nil, "old-%d-%d", p, i)})
			oldWant[fmt.Sprintf("old-%d-%d@%d/%d", p, i, p, i)] = true
		}
		oldCommit[p] = 5
	}
	b.Produce(t, topic, old...)

	r := startShapeRun(t, src)
	r.await(oldWant)
	b.WaitCommitted(t, group, topic, oldCommit)

	for i := range times {
		parts := oldParts
		if i == times-1 {
			parts = newParts
		}
		kafkadriver.RecreateTopic(t, b, topic, parts)
	}
	produce := freshProducer(t, b, topic)
	newWant := map[string]bool{}
	wantCommit := map[int32]int64{}
	for p, n := range want {
		for i := range n {
			produce(p, fmt.Sprintf("new-%d-%d", p, i))
			newWant[fmt.Sprintf("new-%d-%d@%d/%d", p, i, p, i)] = true
		}
		wantCommit[p] = int64(n)
	}
	r.await(newWant)
	r.stop()
	if got := b.Committed(t, group, topic); !maps.Equal(got, wantCommit) {
		t.Fatalf("committed offsets of %s = %v, want %v", topic, got, wantCommit)
	}
}

// shapeRun is a pipeline.Run whose graph reports each record as
// "value@partition/offset"; a record of the new topic ("new-") must come
// once and only when awaited.
type shapeRun struct {
	t        *testing.T
	seen     chan string
	done     chan error
	cancel   context.CancelFunc
	deadline <-chan time.Time
	got      map[string]int
}

func startShapeRun(t *testing.T, src sluice.Source) *shapeRun {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := &shapeRun{t: t, seen: make(chan string, 256), done: make(chan error, 1), cancel: cancel,
		deadline: time.After(kafkadriver.RecreateWait), got: map[string]int{}}
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, rec sluice.Record) error {
			r.seen <- fmt.Sprintf("%s@%d/%d", rec.Value, rec.Partition, rec.Offset)
			return nil
		})
	}
	go func() { r.done <- pipeline.Run(ctx, src, build) }()
	return r
}

func (r *shapeRun) await(want map[string]bool) {
	r.t.Helper()
	for len(want) > 0 {
		select {
		case v := <-r.seen:
			r.got[v]++
			if strings.HasPrefix(v, "new-") && (!want[v] || r.got[v] > 1) {
				r.t.Errorf("record %s delivered (%d times), not awaited", v, r.got[v])
			}
			delete(want, v)
		case err := <-r.done:
			r.t.Fatalf("Run returned %v while records %v were awaited", err, want)
		case <-r.deadline:
			r.t.Fatalf("records %v not delivered within %v (delivered: %v)", want, kafkadriver.RecreateWait, r.got)
		}
	}
}

func (r *shapeRun) stop() {
	r.t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			r.t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(kafkadriver.RecreateWait):
		r.t.Fatalf("Run did not return within %v of its context's end", kafkadriver.RecreateWait)
	}
	for {
		select {
		case v := <-r.seen:
			if strings.HasPrefix(v, "new-") {
				r.t.Errorf("record %s delivered again after the awaited ones", v)
			}
		default:
			return
		}
	}
}

// freshProducer returns a function producing one value to a partition of
// topic through a client made after the topic was recreated (a kgo client
// that saw the old topic ID refuses the new one).
func freshProducer(t *testing.T, b *kafkatest.Broker, topic string) func(partition int32, value string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return func(partition int32, value string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), kafkadriver.RecreateWait)
		defer cancel()
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: partition, Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}
