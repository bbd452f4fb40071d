package testkit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/stages"
)

// Produced is one message a [Producer] accepted: the topic of the Produce
// stage that sent it and the message its toMsg returned (a copy).
type Produced struct {
	Topic   string
	Message sluice.Message
}

// Producer is a Kafka producer for unit tests: the [Produce] stage sends
// its messages here instead of to a broker. It records every message it
// accepts, in the order they were sent (offset order within a partition;
// partitions interleave), and reports each delivered at once, unless told
// to fail it ([Producer.FailWith]).
//
// sink.Produce and franz.Produce take their own producer types, which
// need a broker; a graph that ends in one is made testable by passing the
// produce step to its builder as a function: sink.Produce (or
// franz.Produce) in the program, [Produce] with a Producer in its tests
// (see the example). Produce is the same stage as theirs (one shared
// implementation): the same ordering, backpressure, commit after the
// delivery report, retries of toMsg, dead letters for an invalid toMsg
// error, and errors, so what a test sees is what the program does, minus
// the broker.
//
// Its methods are safe for concurrent use; it works inside
// testing/synctest bubbles (create it inside the bubble when Wait is used
// there). The zero value is not usable; call [NewProducer].
type Producer struct {
	tr *produce.Tracker
	r  recorder[Produced]
}

// errProducerClosed is the fake producer's ErrClosed sentinel: a Producer
// never closes, so no stage reports it.
var errProducerClosed = errors.New("testkit: the producer is closed")

// NewProducer returns a producer that accepts every message.
func NewProducer() *Producer {
	return &Producer{
		tr: produce.NewTracker(produce.Names{Package: "testkit", ErrClosed: errProducerClosed}),
		r:  newRecorder[Produced](),
	}
}

// Produce ends a graph by sending one message per value to topic with p,
// in order: the stage of sink.Produce and franz.Produce (see their docs
// for the contract), sending to p instead of to a broker. A value's
// records commit once p reported its message delivered, which it does at
// once unless [Producer.FailWith] says otherwise. A nil p, an empty topic
// or a nil toMsg fails the build with a *sluice.BuildError naming the
// stage. Options: stages.Name, stages.Buffer, stages.Retry (for toMsg).
func Produce[T any](in pipeline.Stream[T], p *Producer, topic string, toMsg func(T) (sluice.Message, error), opts ...stages.CallOption) pipeline.End {
	var c produce.Client[report]
	var tr *produce.Tracker
	if p != nil {
		c, tr = client{p}, p.tr
	}
	return produce.Stage(in, "testkit.Produce", c, tr, topic, toMsg, opts)
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
	var out []string
	for _, m := range p.r.recorded() {
		if m.Topic == topic {
			out = append(out, string(m.Message.Value))
		}
	}
	return out
}

// Len returns how many messages were recorded.
func (p *Producer) Len() int {
	n, _ := p.r.counts()
	return n
}

// Calls returns how many messages were sent to p, failed ones (see
// [Producer.FailWith]) included.
func (p *Producer) Calls() int {
	_, calls := p.r.counts()
	return calls
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

// client is the fake producer as the Produce stage's library: every
// message is reported at once on the stage's report channel, which the
// stage keeps room in.
type client struct{ p *Producer }

func (c client) Send(_ context.Context, o *produce.Outgoing, reports chan report) error {
	return c.p.tr.Send(func() error {
		reports <- report{t: o.Ticket, err: c.p.send(o.Topic, o.Message)}
		return nil
	})
}

func (client) QueueFull(error) bool { return false }

func (client) Report(ev report) (stagekit.Ticket, error, bool) { return ev.t, ev.err, true }

func (client) GaveUp(error) bool { return false }

func (client) Classify(err error) error { return err }
