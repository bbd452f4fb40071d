package testkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/sink"
)

// Produced is one message a [Producer] accepted: the topic it went to
// and a copy of the message (what a Produce stage's toMsg returned, or a
// dead letter as [Producer.DeadLetter] writes it).
type Produced struct {
	Topic   string
	Message sluice.Message
}

// Producer is a Kafka producer for unit tests: a sink.Producer (pass it
// to sink.Produce and use its DeadLetter as a program passes the
// librdkafka or franz producer) that sends nowhere. It records every
// message it accepts, in the order they were sent (offset order within a
// partition; partitions interleave), and reports each delivered at once,
// unless told to fail it ([Producer.FailWith]).
//
// A program that creates its producer once and passes it to its builder
// as a sink.Producer is tested by passing a Producer instead (see the
// example): sink.Produce and DeadLetter run the same code with it as with
// a real producer (one shared implementation): the same ordering,
// backpressure, commit after the delivery report, retries of toMsg, dead
// letters for an invalid toMsg error, and errors, so what a test sees is
// what the program does, minus the broker.
//
// Its methods are safe for concurrent use; it works inside
// testing/synctest bubbles (create it inside the bubble when Wait is used
// there). The zero value is not usable; call [NewProducer].
type Producer struct {
	// core makes Producer a sink.Producer: sink.Produce and DeadLetter
	// send through it (the fake client, every report written at once).
	*core

	tr *produce.Tracker
	r  recorder[Produced]
}

// core is the embedded produce core, under a name that keeps it out of
// Producer's exported API.
type core = produce.Core

// ErrProducerClosed is wrapped by the errors of produce calls made after
// [Producer.Close]; errors.Is finds sink.ErrClosed in it too.
var ErrProducerClosed = produce.NewErrClosed("testkit")

// NewProducer returns a producer that accepts every message.
func NewProducer() *Producer {
	p := &Producer{
		tr: produce.NewTracker(produce.Names{Package: "testkit", ErrClosed: ErrProducerClosed}),
		r:  newRecorder[Produced](),
	}
	p.core = produce.NewCore(client{p}, p.tr)
	return p
}

// DeadLetter returns the destination to pass to pipeline.WithDeadLetter:
// each dead letter is recorded as a message to topic (see [Produced]),
// with the record's key, value and headers followed by the sluice.dlq.*
// headers, exactly as the Kafka producers write it, and reported at once
// (or failed by [Producer.FailWith]). It has the contract of the Kafka
// producers' DeadLetter, minus the broker: within Run a call returns once
// the message was handed over and the record commits after its report;
// an empty topic fails the start check (CheckStart) and every call; no
// topic is looked up.
func (p *Producer) DeadLetter(topic string) sink.DeadLetterFunc {
	return produce.CoreDeadLetter(p.core, "testkit: Producer.DeadLetter", topic)
}

// Close closes the producer: later produce calls and dead letters fail
// with an error wrapping [ErrProducerClosed], and a Produce stage still
// running stops with it. Nothing is ever outstanding (every message is
// reported when sent), so Close returns nil at once. It is idempotent.
func (p *Producer) Close() error {
	return p.tr.Close(produce.CloseSteps{
		Flush:       func(time.Duration) bool { return false },
		GiveUp:      func(context.Context) {},
		CloseClient: func() {},
		Logger:      slog.New(slog.DiscardHandler),
	})
}

// FailWith makes later messages ask fn first: when it returns an error,
// the message is not recorded and its delivery report fails with that
// error, as a delivery a real producer gave up on: the Produce stage
// stops Run with a *sluice.StageError naming the stage, the topic and
// the record's offset, and nothing from that record on commits. fn is
// called from the partitions' Produce stages, possibly concurrently.
// FailWith(nil) accepts everything again. It may be called at any time,
// also while Run runs.
func (p *Producer) FailWith(fn func(Produced) error) { p.r.failWith(fn) }

// Messages returns a copy of the messages recorded so far, in the order
// they were sent.
func (p *Producer) Messages() []Produced { return p.r.recorded() }

// Values returns the values of the messages recorded for topic, as
// strings, in the order they were sent (nil when there are none).
func (p *Producer) Values(topic string) []string {
	return collect(&p.r, func(m Produced) (string, bool) { return string(m.Message.Value), m.Topic == topic })
}

// Len returns how many messages were recorded.
func (p *Producer) Len() int {
	return p.r.recordedLen()
}

// Calls returns how many messages were sent to p, failed ones (see
// [Producer.FailWith]) included.
func (p *Producer) Calls() int {
	return p.r.callCount()
}

// Wait blocks until at least n messages were recorded and returns a
// snapshot of them (as Messages). It fails the test, saying how many it
// got, if that takes longer than [WaitTimeout]; inside a synctest bubble
// that means every goroutine is blocked: the messages will never come. A
// negative n fails the test.
func (p *Producer) Wait(t testing.TB, n int) []Produced {
	t.Helper()
	return p.r.wait(t, n, "Producer.Wait", func() string {
		got, calls := p.r.counts()
		return fmt.Sprintf("%d messages produced (%d sent)", got, calls)
	})
}

// send handles one message of a Produce stage: it records it, or fails it,
// and returns its delivery report.
func (p *Producer) send(topic string, m sluice.Message) error {
	return p.r.accept(Produced{Topic: topic, Message: copyMessage(m)})
}

// copyMessage returns a copy of m that shares no memory with it: the
// stage may reuse what it handed over once the delivery was reported.
func copyMessage(m sluice.Message) sluice.Message {
	c := sluice.Message{Key: slices.Clone(m.Key), Value: slices.Clone(m.Value)}
	for _, h := range m.Headers {
		c.Headers = append(c.Headers, sluice.Header{Key: h.Key, Value: slices.Clone(h.Value)})
	}
	return c
}

// report is a delivery report of the fake producer.
type report struct {
	t   stagekit.Ticket
	err error
}

// String makes a report a produce.Event.
func (report) String() string { return "testkit delivery report" }

// client is the fake producer as the Produce stage's library: every
// message is reported at once on the stage's report channel, which the
// stage keeps room in.
type client struct{ p *Producer }

// Send admits the message without holding Close up while the FailWith
// function runs (it may block, as a slow broker would): Close then
// proceeds and the message's receiver stops waiting once the producer is
// closed, as with the Kafka producers.
func (c client) Send(_ context.Context, o *produce.Outgoing, reports chan produce.Event) error {
	if err := c.p.tr.Admit(1); err != nil {
		return err
	}
	reports <- report{t: o.Ticket, err: c.p.send(o.Topic, o.Message)}
	return nil
}

func (client) QueueFull(error) bool { return false }

// MaxBuffered: the fake buffers nothing (every message is reported as it
// is sent).
func (client) MaxBuffered() int { return 0 }

func (client) Report(ev produce.Event) (stagekit.Ticket, error, bool) {
	r := ev.(report)
	return r.t, r.err, true
}

func (client) GaveUp(error) bool { return false }

// Classify marks a closed producer's error permanent, as the Kafka
// producers do; other errors (those of FailWith) stay as they are.
func (client) Classify(err error) error {
	if errors.Is(err, ErrProducerClosed) {
		return sluice.Permanent(err)
	}
	return err
}
