package sink

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/pipeline"
)

// Headers added to every dead letter, next to the original headers.
const (
	HeaderTopic     = "sluice.dlq.topic"
	HeaderPartition = "sluice.dlq.partition"
	HeaderOffset    = "sluice.dlq.offset"
	HeaderError     = "sluice.dlq.error"
	HeaderStage     = "sluice.dlq.stage"
)

// DeadLetter returns the destination to pass to pipeline.WithDeadLetter: it
// produces each invalid record to topic with its key, value and headers
// untouched, plus the sluice.dlq.* headers naming the original topic,
// partition, offset, the error text and the stage. Run calls it from each
// partition's dead-letter goroutine, so calls for different partitions
// overlap. A call returns only once the delivery report arrived (or Close
// gave up on the message), so the record's offset commits only after the
// dead letter is stored; a delivery failure is returned (and stops Run: a
// bad record is never dropped silently). A full producer queue is waited
// out. Failures that cannot heal are marked pipeline.Permanent, so Run
// stops at once: the producer closed ([ErrClosed]) or failed fatally, a
// message too large, an unknown topic, bad configuration or credentials.
// Others (a delivery that timed out) are retried under Run's retry policy.
// An empty topic fails every call with a permanent error.
func (p *Producer) DeadLetter(topic string) func(context.Context, pipeline.DeadLetter) error {
	if topic == "" {
		return func(context.Context, pipeline.DeadLetter) error {
			return pipeline.Permanent(errors.New("sink: Producer.DeadLetter: the topic is empty"))
		}
	}
	return func(ctx context.Context, dl pipeline.DeadLetter) error {
		r := dl.Record
		msg := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
			Key:            r.Key,
			Value:          r.Value,
			Timestamp:      r.Timestamp,
		}
		for _, h := range r.Headers {
			msg.Headers = append(msg.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		msg.Headers = append(msg.Headers,
			kafka.Header{Key: HeaderTopic, Value: []byte(r.Topic)},
			kafka.Header{Key: HeaderPartition, Value: []byte(strconv.Itoa(int(r.Partition)))},
			kafka.Header{Key: HeaderOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))},
			kafka.Header{Key: HeaderError, Value: []byte(errText(dl.Err))},
			kafka.Header{Key: HeaderStage, Value: []byte(dl.Stage)},
		)
		report := make(chan kafka.Event, 1)
		for {
			err := p.send(msg, report)
			if err == nil {
				break
			}
			var kerr kafka.Error
			if !errors.As(err, &kerr) || kerr.Code() != kafka.ErrQueueFull {
				return p.classify(fmt.Errorf("dead letter to %s: %w", topic, err))
			}
			select {
			case <-time.After(queueFullWait):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		// Wait for the report even if ctx ends: librdkafka reports every
		// message within message.timeout.ms (or when Close gives up on
		// it), and leaving would drop it.
		var ev kafka.Event
		select {
		case ev = <-report:
		case <-p.gone:
			select {
			case ev = <-report:
			default:
				return pipeline.Permanent(fmt.Errorf("dead letter to %s: %w before its delivery was reported", topic, ErrClosed))
			}
		}
		m, _ := ev.(*kafka.Message)
		if m == nil {
			p.received()
			return fmt.Errorf("dead letter to %s: no delivery report", topic)
		}
		if err := m.TopicPartition.Error; err != nil {
			u := UndeliveredMessage{Topic: topic, Source: pipeline.TopicPartition{Topic: r.Topic, Partition: r.Partition}, Offset: r.Offset}
			if p.receivedFailure(err, u) {
				return pipeline.Permanent(fmt.Errorf("dead letter to %s: %w before the message was delivered (%w)", topic, ErrClosed, err))
			}
			return p.classify(fmt.Errorf("dead letter to %s: %w", topic, err))
		}
		p.received()
		return nil
	}
}

// errText is the error without the "invalid input: " prefix that
// pipeline.Invalid adds.
func errText(err error) string {
	if u := errors.Unwrap(err); u != nil && pipeline.IsInvalid(err) {
		return u.Error()
	}
	return err.Error()
}
