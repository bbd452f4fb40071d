package integration

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The running variant of TestFinalCommitRevokeOfARecreatedTopicKIP848: A
// (librdkafka, KIP-848, nothing committed before: an hour's commit
// interval) has processed the 200 records of a one-partition topic; the
// topic is deleted and created again with 300 records while A runs. The
// broker moves the partition by topic ID: it revokes the old topic's and
// assigns the new one's. librdkafka's revoke names only the topic, and
// commits by name, so a revoke served as a revoke (drain, then commit of
// the processed offsets) commits the old topic's offset (200) onto the new
// topic. The source serves a recreated topic as a loss before a revoke
// (topicsRecreated), but learns of the recreation only from librdkafka's
// log line, read on another goroutine. Every record of the new topic must
// be processed (by A, or by B after A stopped), and no commit may put an
// offset on the new topic past what was processed of it.

// recreatedRun is one run of the scenario: the old topic's records are
// counted by offset, the new topic's by their value "new-<i>" (i is also
// their offset in the new topic), whoever processed them.
type recreatedRun struct {
	b                *kafkatest.Broker
	topic, group     string
	oldSeen, newSeen *offsets
	recreating       atomic.Bool // the deletion was asked for
	mu               sync.Mutex
	bad              []string // commits past what was processed of the new topic
	commits          []string // every commit of A or B once recreating
}

const recreatedOld, recreatedNew = 200, 300

func newRecreatedRun(t *testing.T, b *kafkatest.Broker, topic string) *recreatedRun {
	t.Helper()
	b.CreateTopic(t, topic, 1)
	recs := make([]sluice.Record, recreatedOld)
	for i := range recs {
		recs[i] = sluice.Record{Value: fmt.Appendf(nil, "old-%d", i)}
	}
	b.Produce(t, topic, recs...)
	return &recreatedRun{b: b, topic: topic, group: topic + "-g",
		oldSeen: newOffsets(map[int32]int64{0: recreatedOld}), newSeen: newOffsets(map[int32]int64{0: recreatedNew})}
}

// builder counts every record processed.
func (r *recreatedRun) builder(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	return stages.Each(in, func(_ context.Context, rec sluice.Record) error {
		if v, ok := bytes.CutPrefix(rec.Value, []byte("new-")); ok {
			i, err := strconv.Atoi(string(v))
			if err != nil || i != int(rec.Offset) {
				return fmt.Errorf("record %q at offset %d of the new topic", rec.Value, rec.Offset)
			}
			r.newSeen.add(0, int64(i))
			return nil
		}
		r.oldSeen.add(rec.Partition, rec.Offset)
		return nil
	})
}

// newProcessed is how many of the new topic's first records were all
// processed (every offset below it was).
func (r *recreatedRun) newProcessed() int64 {
	var n int64
	for n < recreatedNew && r.newSeen.n[0][n].Load() > 0 {
		n++
	}
	return n
}

// committer is a pipeline hook that checks each commit of member name
// once the recreation started.
type committer struct {
	r    *recreatedRun
	name string
}

func (c committer) OnCommitted(offs []sluice.Offset, _ time.Duration, err error) {
	r := c.r
	if !r.recreating.Load() {
		return
	}
	done := r.newProcessed()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range offs {
		if o.Topic != r.topic {
			continue
		}
		line := fmt.Sprintf("%s %s: commit of %d/%d (err %v) with the new topic processed below %d", time.Now().Format("15:04:05.000"), c.name, o.Partition, o.Next, err, done)
		r.commits = append(r.commits, line)
		if err == nil && o.Next > done {
			r.bad = append(r.bad, line)
		}
	}
}

// startA starts consumer A (librdkafka, KIP-848, committing only at the
// end) on the old topic and waits until it processed every record of it,
// having committed nothing.
func (r *recreatedRun) startA(t *testing.T) *consumer {
	src := sourceOf(t, r.b, r.group, r.topic, source.Config{GroupConfig: sluice.GroupConfig{CommitInterval: time.Hour},
		Overrides: map[string]any{"group.protocol": "consumer", "client.id": "A"}})
	a := startConsumer(t, "A", src, r.builder, pipeline.WithHooks(committer{r, "A"}))
	waitFor(t, "A processing every record of the old topic", func() bool { return r.oldSeen.distinct() == recreatedOld }, a)
	if c := r.b.Committed(t, r.group, r.topic); len(c) != 0 {
		t.Fatalf("A committed %v; its background commit interval is an hour", c)
	}
	return a
}

// recreate deletes the topic and creates it again with the new records,
// produced by a new client (one that knew the old topic ID would produce
// to it).
func (r *recreatedRun) recreate(t *testing.T) {
	t.Helper()
	r.recreating.Store(true)
	kafkadriver.RecreateTopic(t, r.b, r.topic, 1)
	producer, err := kgo.NewClient(kgo.SeedBrokers(r.b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	var recs []*kgo.Record
	for i := range recreatedNew {
		recs = append(recs, &kgo.Record{Topic: r.topic, Partition: 0, Value: fmt.Appendf(nil, "new-%d", i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkadriver.RecreateWait)
	defer cancel()
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing to the recreated %s: %v", r.topic, err)
	}
}

// finish stops A once it processed the new topic's last record, runs B on
// the group until the group committed the new topic's end, and checks
// that every record of the new topic was processed and that no commit
// went past what was processed of it.
func (r *recreatedRun) finish(t *testing.T, a *consumer) {
	t.Helper()
	waitFor(t, "A processing the new topic's last record", func() bool { return r.newSeen.n[0][recreatedNew-1].Load() > 0 }, a)
	left := r.b.Committed(t, r.group, r.topic)
	a.stop(t)
	afterA := r.b.Committed(t, r.group, r.topic)
	aNew := r.newSeen.distinct()

	bSrc := sourceOf(t, r.b, r.group, r.topic, source.Config{GroupConfig: sluice.GroupConfig{CommitInterval: 50 * time.Millisecond},
		Overrides: map[string]any{"group.protocol": "consumer", "client.id": "B"}})
	bc := startConsumer(t, "B", bSrc, r.builder, pipeline.WithHooks(committer{r, "B"}))
	waitGroupAt(t, r.b, r.group, r.topic, map[int32]int64{0: recreatedNew}, bc)
	bc.stop(t)

	r.mu.Lock()
	defer r.mu.Unlock()
	t.Logf("the group kept %v while A ran on the new topic, %v once A stopped; A processed %d distinct records of the new topic, A and B %d; commits: %q",
		left, afterA, aNew, r.newSeen.distinct(), r.commits)
	for _, l := range r.bad {
		t.Errorf("a commit put an offset on the recreated topic past what was processed of it (the old topic's offset committed by name onto the new topic): %s", l)
	}
	if n := r.newSeen.distinct(); n != recreatedNew {
		missing := []int64{}
		for off := range int64(recreatedNew) {
			if r.newSeen.n[0][off].Load() == 0 && len(missing) < 5 {
				missing = append(missing, off)
			}
		}
		t.Errorf("%d of the new topic's %d records were processed: %d lost (first missing offsets %v)", n, recreatedNew, recreatedNew-n, missing)
	}
}

// TestRecreatedTopicRevokeWhileRunningKIP848 runs the scenario with no
// control over the broker, so that it runs on Apache Kafka too: whether
// the revoke is served before the source read librdkafka's log line of
// the new topic ID is left to the timing.
func TestRecreatedTopicRevokeWhileRunningKIP848(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	r := newRecreatedRun(t, b, "recreated-running-848")
	a := r.startA(t)
	r.recreate(t)
	r.finish(t, a)
}

// heldLibrdkafkaLog is a slog.Handler that, once armed, holds every
// record the source forwards from librdkafka (attribute source=librdkafka)
// until release is closed or holdBound passed: a slow log handler. The
// source reads librdkafka's log events, among them the line of a topic's
// new ID, on one goroutine that hands each to the handler in turn, so
// while a record is held the line of the new ID waits behind it.
type heldLibrdkafkaLog struct {
	armed   *atomic.Bool
	release <-chan struct{}
	held    *atomic.Int64
	inner   slog.Handler
}

// holdBound bounds how long heldLibrdkafkaLog holds a record, should the
// release never come.
const holdBound = 20 * time.Second

func (h heldLibrdkafkaLog) Enabled(context.Context, slog.Level) bool { return true }

func (h heldLibrdkafkaLog) Handle(ctx context.Context, r slog.Record) error {
	if h.armed.Load() {
		fromLibrdkafka := false
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "source" && a.Value.String() == "librdkafka" {
				fromLibrdkafka = true
				return false
			}
			return true
		})
		if fromLibrdkafka {
			h.held.Add(1)
			timer := time.NewTimer(holdBound)
			select {
			case <-h.release:
			case <-timer.C:
			}
			timer.Stop()
		}
	}
	if h.inner.Enabled(ctx, r.Level) {
		return h.inner.Handle(ctx, r)
	}
	return nil
}

func (h heldLibrdkafkaLog) WithAttrs(as []slog.Attr) slog.Handler {
	h.inner = h.inner.WithAttrs(as)
	return h
}

func (h heldLibrdkafkaLog) WithGroup(name string) slog.Handler {
	h.inner = h.inner.WithGroup(name)
	return h
}

// leaveWatch is a pipeline hook that calls fn at the first revoke or loss
// of a partition once armed.
type leaveWatch struct {
	armed *atomic.Bool
	once  *sync.Once
	fn    func(string)
}

func (w leaveWatch) OnPartitionRevoked(sluice.TopicPartition, time.Duration, bool) {
	if w.armed.Load() {
		w.once.Do(func() { w.fn("revoked") })
	}
}

func (w leaveWatch) OnPartitionLost(sluice.TopicPartition) {
	if w.armed.Load() {
		w.once.Do(func() { w.fn("lost") })
	}
}

// TestRecreatedTopicRevokeWhileRunningKIP848SlowLog is the scenario with
// the order made certain: A's log handler is slow (it holds every record
// from librdkafka, A logging librdkafka's "cgrp" debug context, from the
// deletion until A's first revoke or loss), and the broker holds A's
// heartbeats while the topic is recreated (recreateHoldingHeartbeats).
func TestRecreatedTopicRevokeWhileRunningKIP848SlowLog(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewKfake(t, kafkatest.WithBrokerConfig(map[string]string{"group.consumer.heartbeat.interval.ms": "250"}))
	r := newRecreatedRun(t, b, "recreated-running-848-slowlog")

	var armed atomic.Bool
	release := make(chan struct{})
	var held atomic.Int64
	var releasedBy atomic.Value
	inner := slog.DiscardHandler
	if l := kafkatest.Logger(t); l != nil {
		inner = l.Handler()
	}
	log := heldLibrdkafkaLog{armed: &armed, release: release, held: &held, inner: inner}
	src, err := source.NewSource(source.Config{
		GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: r.group, Topics: []string{r.topic}, CommitInterval: time.Hour, Logger: slog.New(log)},
		Overrides:   map[string]any{"group.protocol": "consumer", "client.id": "A", "debug": "cgrp"},
	})
	if err != nil {
		t.Fatal(err)
	}
	watch := leaveWatch{armed: &armed, once: new(sync.Once), fn: func(how string) {
		releasedBy.Store(how)
		close(release)
	}}
	t.Cleanup(func() { watch.once.Do(func() { close(release) }) })
	a := startConsumer(t, "A", src, r.builder, pipeline.WithHooks(committer{r, "A"}, watch))
	waitFor(t, "A processing every record of the old topic", func() bool { return r.oldSeen.distinct() == recreatedOld }, a)
	if c := b.Committed(t, r.group, r.topic); len(c) != 0 {
		t.Fatalf("A committed %v; its background commit interval is an hour", c)
	}

	armed.Store(true)
	r.recreateHoldingHeartbeats(t)

	r.finish(t, a)
	how, _ := releasedBy.Load().(string)
	t.Logf("A's log handler held %d librdkafka records until A's first %s", held.Load(), how)
}

// recreateHoldingHeartbeats recreates the topic (recreate) while the
// broker holds the group's heartbeats, so that the next heartbeat answer
// brings the new topic ID in the assignment at once, in place of the old
// one (a revoke while the topic is gone would commit nothing: the broker
// refuses a commit for a missing topic).
func (r *recreatedRun) recreateHoldingHeartbeats(t *testing.T) {
	t.Helper()
	recreated := make(chan struct{})
	var holding atomic.Bool
	holding.Store(true)
	r.b.Cluster().ControlKey(int16(kmsg.ConsumerGroupHeartbeat), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		r.b.Cluster().KeepControl()
		if holding.Load() && kr.(*kmsg.ConsumerGroupHeartbeatRequest).Group == r.group {
			r.b.Cluster().SleepControl(func() { <-recreated })
		}
		return nil, nil, false
	})
	defer func() {
		holding.Store(false)
		close(recreated)
	}()
	r.recreate(t)
}

// TestRecreatedTopicRevokeWhileRunningKIP848HeldHeartbeat is the scenario
// with A's heartbeats held while the topic is recreated, and A's metadata
// refreshed only as librdkafka needs it (the default interval, 5
// minutes). A learns the new topic ID either from the refresh its failed
// fetches of the deleted topic cause, or from the metadata request for
// the next assignment's unknown topic ID; either answer librdkafka logs
// (the new ID) before it raises the revoke of the old topic, but the log
// line reaches the source on another goroutine. Which of the two the
// source serves first is the race: mostly the log line, so this test
// mostly passes.
func TestRecreatedTopicRevokeWhileRunningKIP848HeldHeartbeat(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewKfake(t, kafkatest.WithBrokerConfig(map[string]string{"group.consumer.heartbeat.interval.ms": "250"}))
	r := newRecreatedRun(t, b, "recreated-running-848-heldhb")
	a := r.startA(t)
	r.recreateHoldingHeartbeats(t)
	r.finish(t, a)
}
