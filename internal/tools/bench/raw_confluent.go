package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// pollMs is the raw loops' poll timeout.
const pollMs = 100

// commitEvery is how often the raw loops commit (Sluice's default commit
// interval).
const commitEvery = time.Second

// rawQueueKiB and rawQueueMessages are the prefetch queue package source
// gives librdkafka at pipeline's default in-flight byte budget
// (queued.max.messages.kbytes and queued.min.messages; see
// source/config_prefetch.go).
const (
	rawQueueKiB      = 1024
	rawQueueMessages = 8192
)

// rawConsumerConfig is the librdkafka configuration of the raw loops: the
// settings package source sets (earliest, fetch.queue.backoff.ms=10,
// fetch.wait.max.ms=100, cooperative-sticky, its prefetch queue at the
// default budget) with its own commit policy.
func rawConsumerConfig(cfg runConfig) kafka.ConfigMap {
	return kafka.ConfigMap{
		"queued.max.messages.kbytes":    rawQueueKiB,
		"queued.min.messages":           rawQueueMessages,
		"bootstrap.servers":             strings.Join(cfg.brokers, ","),
		"group.id":                      cfg.group,
		"auto.offset.reset":             "earliest",
		"fetch.queue.backoff.ms":        10,
		"fetch.wait.max.ms":             100,
		"partition.assignment.strategy": "cooperative-sticky",
		"enable.auto.commit":            true,
		"auto.commit.interval.ms":       int(commitEvery / time.Millisecond),
		"log_level":                     3,
	}
}

// rawConfluent is the bare confluent-kafka-go poll loop: Poll, record,
// repeat. librdkafka stores each offset as Poll returns the message and
// auto-commits every second; the loop commits synchronously once the last
// record is recorded, then closes.
func rawConfluent(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
	return rawConfluentWith(ctx, cfg, rawConsumerConfig(cfg), tr, w)
}

// rawConfluentDefaultQueue is rawConfluent with librdkafka's own prefetch
// queue (64 MiB and 100,000 messages), what a loop that does not set it
// gets.
func rawConfluentDefaultQueue(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
	cm := rawConsumerConfig(cfg)
	delete(cm, "queued.max.messages.kbytes")
	delete(cm, "queued.min.messages")
	return rawConfluentWith(ctx, cfg, cm, tr, w)
}

// storingConsumerConfig is rawConsumerConfig for the loops that store
// the offsets to commit themselves (enable.auto.offset.store=false;
// librdkafka still auto-commits what was stored every second).
func storingConsumerConfig(cfg runConfig) kafka.ConfigMap {
	cm := rawConsumerConfig(cfg)
	cm["enable.auto.offset.store"] = false
	return cm
}

// subscribed returns a consumer with the configuration cm, subscribed to
// the input topic with onAssigned(w); it closes the consumer if the
// subscription fails.
func subscribed(cfg runConfig, cm kafka.ConfigMap, w *window) (*kafka.Consumer, error) {
	c, err := kafka.NewConsumer(&cm)
	if err != nil {
		return nil, err
	}
	if err := c.SubscribeTopics([]string{cfg.topic}, onAssigned(w)); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return c, nil
}

// rawConfluentWith runs the raw loop with the client configuration cm.
func rawConfluentWith(ctx context.Context, cfg runConfig, cm kafka.ConfigMap, tr *tracker, w *window) error {
	c, err := subscribed(cfg, cm, w)
	if err != nil {
		return err
	}
	target := int64(cfg.l.records)
	var n int64
	for n < target && ctx.Err() == nil {
		switch e := c.Poll(pollMs).(type) {
		case *kafka.Message:
			w.open()
			if !tr.record(e.TopicPartition.Partition, int64(e.TopicPartition.Offset), valueHash(e.Value)) {
				return errors.Join(fmt.Errorf("record of unknown partition %d", e.TopicPartition.Partition), c.Close())
			}
			n++
		case kafka.Error:
			if e.IsFatal() {
				return errors.Join(e, c.Close())
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return errors.Join(err, c.Close())
	}
	w.close()
	return errors.Join(commitStored(c), c.Close())
}

// onAssigned is a rebalance callback that marks the first assignment in
// w. It assigns nothing itself: confluent-kafka-go then does the
// (incremental) assign.
func onAssigned(w *window) kafka.RebalanceCb {
	return func(_ *kafka.Consumer, ev kafka.Event) error {
		if _, ok := ev.(kafka.AssignedPartitions); ok {
			w.assign()
		}
		return nil
	}
}

// commitStored commits the stored offsets synchronously. librdkafka
// answers _NO_OFFSET when the auto-committer already committed them all:
// that is no error.
func commitStored(c *kafka.Consumer) error {
	_, err := c.Commit()
	var kerr kafka.Error
	if errors.As(err, &kerr) && kerr.Code() == kafka.ErrNoOffset {
		return nil
	}
	return err
}

// k2kRawConfluent is the raw consume → produce loop on confluent-kafka-go:
// each record is produced (key and value) to the output topic by a
// producer configured like confluent.NewProducer's (acks=all, idempotence,
// linger.ms=5); the producer's report goroutine marks deliveries, and the
// consume loop stores, every 100 ms, the offsets below which everything
// was delivered (enable.auto.offset.store=false; librdkafka auto-commits
// stored offsets every second). Once the last record is delivered it
// stores and commits synchronously, then closes.
func k2kRawConfluent(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
	cm := storingConsumerConfig(cfg)
	c, err := kafka.NewConsumer(&cm)
	if err != nil {
		return err
	}
	pm := kafka.ConfigMap{
		"bootstrap.servers":  strings.Join(cfg.brokers, ","),
		"acks":               "all",
		"enable.idempotence": true,
		"linger.ms":          5,
		"message.timeout.ms": 30000,
		"log_level":          3,
	}
	p, err := kafka.NewProducer(&pm)
	if err != nil {
		return errors.Join(err, c.Close())
	}
	d := newDeliveries(cfg.l)
	failed := make(chan error, 1)
	reports := make(chan struct{})
	go func() {
		defer close(reports)
		for ev := range p.Events() {
			m, ok := ev.(*kafka.Message)
			if !ok {
				continue
			}
			in := m.Opaque.(*kafka.Message)
			if m.TopicPartition.Error != nil {
				select {
				case failed <- fmt.Errorf("delivery of input %d/%d: %w", in.TopicPartition.Partition, in.TopicPartition.Offset, m.TopicPartition.Error):
				default:
				}
				continue
			}
			if d.mark(in.TopicPartition.Partition, int64(in.TopicPartition.Offset)) {
				w.close()
			}
		}
	}()
	closeAll := func() error {
		p.Close() // closes Events: the report goroutine ends
		<-reports
		return c.Close()
	}
	if err := c.SubscribeTopics([]string{cfg.topic}, onAssigned(w)); err != nil {
		return errors.Join(err, closeAll())
	}
	out := cfg.out
	stored := make([]int64, cfg.l.partitions)
	store := func() error {
		var tps []kafka.TopicPartition
		for part, next := range d.committable() {
			if next > stored[part] {
				stored[part] = next
				tps = append(tps, kafka.TopicPartition{Topic: &cfg.topic, Partition: int32(part), Offset: kafka.Offset(next)})
			}
		}
		if len(tps) == 0 {
			return nil
		}
		_, err := c.StoreOffsets(tps)
		return err
	}
	lastStore := time.Now()
	target := int64(cfg.l.records)
	var n int64
loop:
	for ctx.Err() == nil {
		select {
		case err := <-failed:
			return errors.Join(err, closeAll())
		case <-d.done:
			break loop
		default:
		}
		if time.Since(lastStore) >= 100*time.Millisecond {
			if err := store(); err != nil {
				return errors.Join(err, closeAll())
			}
			lastStore = time.Now()
		}
		timeout := pollMs
		if n >= target {
			timeout = 10 // everything consumed: serve the consumer while the last deliveries come
		}
		switch e := c.Poll(timeout).(type) {
		case *kafka.Message:
			w.open()
			if !tr.record(e.TopicPartition.Partition, int64(e.TopicPartition.Offset), valueHash(e.Value)) {
				return errors.Join(fmt.Errorf("record of unknown partition %d", e.TopicPartition.Partition), closeAll())
			}
			n++
			msg := &kafka.Message{
				TopicPartition: kafka.TopicPartition{Topic: &out, Partition: kafka.PartitionAny},
				Key:            e.Key, Value: e.Value, Opaque: e,
			}
			if err := produceWaiting(p, msg); err != nil {
				return errors.Join(err, closeAll())
			}
		case kafka.Error:
			if e.IsFatal() {
				return errors.Join(e, closeAll())
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return errors.Join(err, closeAll())
	}
	err = store()
	if err == nil {
		err = commitStored(c)
	}
	return errors.Join(err, closeAll())
}

// produceWaiting hands msg to the producer, waiting while its queue is
// full (deliveries drain it).
func produceWaiting(p *kafka.Producer, msg *kafka.Message) error {
	for {
		err := p.Produce(msg, nil)
		var kerr kafka.Error
		if err == nil || !errors.As(err, &kerr) || kerr.Code() != kafka.ErrQueueFull {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}
