package sink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// Message is what a produce stage writes for one value.
type Message struct {
	Key     []byte
	Value   []byte
	Headers []pipeline.Header
}

// queueFullWait is how long a stage waits for deliveries before retrying a
// produce that found librdkafka's queue full.
const queueFullWait = 5 * time.Millisecond

// Produce ends a graph by producing one message per value to topic with
// p, in order. A value's records commit only after its delivery report
// succeeded. A full producer queue is backpressure (the stage waits for
// deliveries), never a drop. A delivery that fails after librdkafka's own
// retries stops pipeline.Run with the error and the record's position.
// toMsg returning an error marked with pipeline.Invalid dead-letters the
// record. On a graceful revoke the stage waits for the delivery reports of
// everything it produced; when the partition is lost or its drain times
// out, it stops producing and still waits for outstanding reports
// (bounded by message.timeout.ms) so none is left behind.
func Produce[T any](in pipeline.Stream[T], p *Producer, topic string, toMsg func(T) (Message, error), opts ...stages.Option) pipeline.End {
	if p == nil {
		panic("sink.Produce: the producer is nil")
	}
	if topic == "" {
		panic("sink.Produce: the topic is empty")
	}
	return pipeline.AddEnd(in, stages.Spec("Produce", opts...), func(s *pipeline.Stage, inl *pipeline.Inlet[T]) error {
		st := &producing{p: p, s: s, topic: topic, reports: make(chan kafka.Event, 1024)}
		defer st.waitAll()
		ctx := s.Context()
		for {
			select {
			case chunk, ok := <-inl.C():
				if ctx.Err() != nil {
					return nil // cancelled: produce nothing more
				}
				if !ok {
					return st.settle(ctx)
				}
				for _, it := range chunk {
					m, err := toMsg(it.Value)
					if err != nil {
						if err := s.Fail(it.Ticket, err); err != nil {
							return err
						}
						continue
					}
					if err := st.produce(ctx, m, it.Ticket); err != nil {
						return err
					}
				}
				inl.Release(chunk)
			case ev := <-st.reports:
				if err := st.report(ev); err != nil {
					return err
				}
			case <-ctx.Done():
				return nil
			}
		}
	})
}

// producing is one Produce stage's state.
type producing struct {
	p           *Producer
	s           *pipeline.Stage
	topic       string
	reports     chan kafka.Event
	outstanding int
}

func (st *producing) produce(ctx context.Context, m Message, t pipeline.Ticket) error {
	msg := &kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &st.topic, Partition: kafka.PartitionAny},
		Key:            m.Key,
		Value:          m.Value,
		Opaque:         t,
	}
	for _, h := range m.Headers {
		msg.Headers = append(msg.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	// librdkafka's one delivery goroutine blocks while a report channel is
	// full, stalling every report of the producer (dead letters and other
	// partitions included). Keeping at most cap(reports) messages
	// outstanding means a report always finds room, even while this stage
	// waits elsewhere (for the dead-letter queue in Fail, say).
	for st.outstanding >= cap(st.reports) {
		select {
		case ev := <-st.reports:
			if err := st.report(ev); err != nil {
				return err
			}
		case <-ctx.Done():
			return nil
		}
	}
	for {
		err := st.p.p.Produce(msg, st.reports)
		if err == nil {
			st.outstanding++
			return nil
		}
		var kerr kafka.Error
		if !errors.As(err, &kerr) || kerr.Code() != kafka.ErrQueueFull {
			return st.s.Fail(t, fmt.Errorf("producing to %s: %w", st.topic, err))
		}
		// Backpressure: handle a delivery report (or wait a little) and
		// try again.
		select {
		case ev := <-st.reports:
			if err := st.report(ev); err != nil {
				return err
			}
		case <-time.After(queueFullWait):
		case <-ctx.Done():
			return nil
		}
	}
}

// report completes (or fails) the value behind one delivery report.
func (st *producing) report(ev kafka.Event) error {
	m, ok := ev.(*kafka.Message)
	if !ok {
		return nil
	}
	st.outstanding--
	t, _ := m.Opaque.(pipeline.Ticket)
	if m.TopicPartition.Error != nil {
		return st.s.Fail(t, fmt.Errorf("delivery to %s failed: %w", st.topic, m.TopicPartition.Error))
	}
	st.s.Done(t)
	return nil
}

// settle waits for every outstanding delivery report after the input
// closed (graceful drain).
func (st *producing) settle(ctx context.Context) error {
	for st.outstanding > 0 {
		select {
		case ev := <-st.reports:
			if err := st.report(ev); err != nil {
				return err
			}
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// waitAll drains the remaining reports so librdkafka never blocks on this
// stage's channel after it stopped; their values are completed only if the
// partition is still owned (the tracker ignores the rest).
func (st *producing) waitAll() {
	for st.outstanding > 0 {
		ev := <-st.reports
		if m, ok := ev.(*kafka.Message); ok {
			st.outstanding--
			if m.TopicPartition.Error == nil {
				if t, ok := m.Opaque.(pipeline.Ticket); ok {
					st.s.Done(t)
				}
			}
		}
	}
}
