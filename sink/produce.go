package sink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
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

// reportBuffer is the capacity of a Produce stage's report channel, and so
// the most messages it has outstanding.
const reportBuffer = 1024

// Produce ends a graph by producing one message per value to topic with
// p, in order. A value's records commit only after its delivery report
// succeeded. A full producer queue is backpressure (the stage waits for
// deliveries), never a drop. A delivery that fails after librdkafka's own
// retries stops pipeline.Run with the error and the record's position.
//
// toMsg is called like any stage function: timed for hooks, watched
// by the stuck detector, retried under the stage's retry policy on a
// transient error, a panic reported at the record's offset; an error
// marked with pipeline.Invalid dead-letters the record.
//
// On a graceful revoke the stage waits for the delivery reports of
// everything it produced. When the partition is lost or its drain times
// out, it produces nothing more (not even the rest of the chunk at hand)
// and still waits for outstanding reports (bounded by message.timeout.ms,
// or by p.Close) so none is left behind. Once p is closed, the stage fails
// with an error wrapping [ErrClosed]. A nil p, an empty topic or a nil
// toMsg fails the build with a *pipeline.BuildError naming the stage.
// Options: stages.Name, stages.Buffer, stages.Retry (for toMsg).
func Produce[T any](in pipeline.Stream[T], p *Producer, topic string, toMsg func(T) (Message, error), opts ...stages.CallOption) pipeline.End {
	sp := stages.Spec("Produce", opts...)
	switch {
	case p == nil:
		sp.Problem = errors.New("sink.Produce: the producer is nil")
	case topic == "":
		sp.Problem = errors.New("sink.Produce: the topic is empty")
	case toMsg == nil:
		sp.Problem = errors.New("sink.Produce: toMsg is nil")
	}
	return stagekit.AddEnd(in, sp, func(s *stagekit.Stage, inl *stagekit.Inlet[T]) error {
		st := &producing{p: p, s: s, topic: topic, reports: make(chan kafka.Event, reportBuffer)}
		defer st.waitAll()
		ctx := s.Context()
		pr := s.Probe()
		convert := func(_ context.Context, v T) (Message, error) { return toMsg(v) }
		return stagekit.RunLoop(s, inl, stagekit.Loop[T, kafka.Event]{
			OnChunk: func(chunk []stagekit.Item[T]) error { return produceChunk(ctx, st, pr, chunk, convert) },
			OnDrain: func() error { return st.settle(ctx) },
			Events:  st.reports,
			OnEvent: st.report,
			Wake:    func() <-chan struct{} { return p.gone },
			OnWake:  st.closed,
		})
	})
}

// producing is one Produce stage's state.
type producing struct {
	p           *Producer
	s           *stagekit.Stage
	topic       string
	reports     chan kafka.Event
	outstanding int
}

// produceChunk converts and produces the values of chunk in order. It
// stops at once when ctx ends (the partition was lost or its drain timed
// out): nothing more of the chunk is produced.
func produceChunk[T any](ctx context.Context, st *producing, pr *stagekit.Probe, chunk []stagekit.Item[T], convert func(context.Context, T) (Message, error)) error {
	for _, it := range chunk {
		m, err := stagekit.Call(ctx, st.s, pr, it, convert)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if err := st.s.Fail(it.Ticket, err); err != nil {
				return err
			}
			continue
		}
		if err := st.produce(ctx, m, it.Ticket); err != nil {
			return err
		}
	}
	return nil
}

func (st *producing) produce(ctx context.Context, m Message, t stagekit.Ticket) error {
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
		if ok, err := st.await(ctx, nil); !ok {
			return err
		}
	}
	for {
		err := st.p.send(msg, st.reports)
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
		if ok, err := st.await(ctx, time.After(queueFullWait)); !ok {
			return err
		}
	}
}

// await handles the next delivery report, or waits for timeout (nil: no
// timeout). It returns false when the stage must stop: with nil when ctx
// ended, with the stage's error when a delivery failed or the producer
// closed.
func (st *producing) await(ctx context.Context, timeout <-chan time.Time) (bool, error) {
	select {
	case ev := <-st.reports:
		if err := st.report(ev); err != nil {
			return false, err
		}
		return true, nil
	case <-timeout:
		return true, nil
	case <-st.p.gone:
		return false, st.closed()
	case <-ctx.Done():
		return false, nil
	}
}

// report completes (or fails) the value behind one delivery report.
func (st *producing) report(ev kafka.Event) error {
	m, ok := ev.(*kafka.Message)
	if !ok {
		return nil
	}
	st.outstanding--
	t, _ := m.Opaque.(stagekit.Ticket)
	if err := m.TopicPartition.Error; err != nil {
		return st.failed(t, err)
	}
	st.p.received()
	st.s.Done(t)
	return nil
}

// failed handles the failed delivery of the value holding t and returns
// the stage's error.
func (st *producing) failed(t stagekit.Ticket, err error) error {
	serr := st.s.Fail(t, fmt.Errorf("delivery to %s failed: %w", st.topic, err))
	part := st.s.Partition()
	u := UndeliveredMessage{Topic: st.topic, Source: pipeline.TopicPartition{Topic: part.Topic, Partition: part.Partition}, Offset: -1}
	var se *pipeline.StageError
	if errors.As(serr, &se) {
		u.Offset = se.Offset
	}
	if st.p.receivedFailure(err, u) {
		serr = st.s.Fail(t, fmt.Errorf("delivery to %s failed: %w before the message was delivered (%w)", st.topic, ErrClosed, err))
	}
	return serr
}

// closed handles the reports the client delivered before it closed and
// returns the stage's error: the other reports never come, and their
// values stay uncommitted.
func (st *producing) closed() error {
	for {
		select {
		case ev := <-st.reports:
			if err := st.report(ev); err != nil {
				return err
			}
		default:
			if st.outstanding == 0 {
				return st.s.Fail(stagekit.Ticket{}, fmt.Errorf("producing to %s: %w", st.topic, ErrClosed))
			}
			return st.s.Fail(stagekit.Ticket{}, fmt.Errorf("producing to %s: %w before %d deliveries were reported", st.topic, ErrClosed, st.outstanding))
		}
	}
}

// settle waits for every outstanding delivery report after the input
// closed (graceful drain).
func (st *producing) settle(ctx context.Context) error {
	for st.outstanding > 0 {
		if ok, err := st.await(ctx, nil); !ok {
			return err
		}
	}
	return nil
}

// waitAll drains the remaining reports so librdkafka never blocks on this
// stage's channel after it stopped, until the producer closed; their
// values are completed only if the partition is still owned (the tracker
// ignores the rest).
func (st *producing) waitAll() {
	for st.outstanding > 0 {
		var ev kafka.Event
		select {
		case ev = <-st.reports:
		case <-st.p.gone:
			select {
			case ev = <-st.reports:
			default:
				return // never reported
			}
		}
		m, ok := ev.(*kafka.Message)
		if !ok {
			continue
		}
		st.outstanding--
		t, _ := m.Opaque.(stagekit.Ticket)
		if err := m.TopicPartition.Error; err != nil {
			_ = st.failed(t, err) // the stage already stopped: only Close wants to know
			continue
		}
		st.p.received()
		st.s.Done(t)
	}
}
