package franz

import (
	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// Produce ends a graph by producing one message per value to topic with
// p, in order. A value's records commit only after its delivery was
// acknowledged (kgo's promise without error; acks=all by default). A
// full kgo buffer (kgo.MaxBufferedRecords, kgo.MaxBufferedBytes) is
// backpressure (the stage waits for room), never a drop; each stage keeps
// at most 1024 messages outstanding. A delivery that fails after kgo's own
// retries, within [ProducerConfig.DeliveryTimeout] ([DefaultDeliveryTimeout],
// 30s, unless set), stops pipeline.Run
// with a *sluice.StageError naming the topic and the record's position.
//
// toMsg is called like any stage function: timed for hooks, watched
// by the stuck detector, retried under the stage's retry policy on a
// transient error, a panic reported at the record's offset; an error
// marked with sluice.Invalid dead-letters the record.
//
// On a graceful revoke the stage waits for the delivery reports of
// everything it produced. When the partition is lost or its drain times
// out, it produces nothing more (not even the rest of the chunk at hand;
// a produce waiting for buffer room returns) and still waits for
// outstanding reports (bounded by ProducerConfig.DeliveryTimeout, or by
// p.Close) so none is left behind; if that takes longer than the exit
// grace (see pipeline.Run), the runtime abandons the stage, which goes on
// reading the reports, and Run stops with sluice.ErrAbandoned. Once p is
// closed, the stage fails with an error wrapping [ErrClosed]. A nil p, an
// empty topic or a nil toMsg fails the build with a *sluice.BuildError
// naming the stage; so does a p created while this graph was being built
// (NewProducer called inside the builder: one client per partition, never
// closed), and a topic that does not exist (looked up when the first graph
// using it is built, unless ProducerConfig.SkipTopicCheck). Options:
// stages.Name, stages.Buffer, stages.Retry (for toMsg).
func Produce[T any](in pipeline.Stream[T], p *Producer, topic string, toMsg func(T) (sluice.Message, error), opts ...stages.CallOption) pipeline.End {
	return produce.ProducerStage(in, "franz.Produce", p, (*Producer).stageClient, topic, toMsg, opts)
}

// stageClient is what a Produce stage sends with: the producer's client
// and tracker.
func (p *Producer) stageClient() (produce.Client[report], *produce.Tracker) { return client{p}, p.tr }
