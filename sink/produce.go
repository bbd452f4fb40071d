package sink

import (
	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// Message is what a produce stage writes for one value: Key, Value and
// Headers (see sluice.Message, which it is).
type Message = sluice.Message

// Producer is a Kafka producer shared by the Produce stages of every
// partition and by the dead-letter destination: confluent.NewProducer
// and confluent.NewTransactionalProducer (librdkafka), franz.NewProducer
// and franz.NewTransactionalProducer (franz-go), or testkit.NewProducer
// (a fake for unit tests) return one. Only those implement it (it has an
// unexported method): [Produce] and DeadLetter rely on the bookkeeping the
// backends share (how many deliveries are outstanding, which ones Close
// gave up on), which a producer written elsewhere could not keep.
//
// A Producer is safe for concurrent use. Create it once, before
// pipeline.Run (a producer created inside the builder fails the build),
// use it in every graph of that Run, and Close it after Run returned.
type Producer interface {
	// Backend (an internal interface with one unexported method) seals
	// Producer: only the producers of sink/confluent, franz and testkit
	// implement it.
	produce.Backend

	// DeadLetter returns the destination to pass to
	// pipeline.WithDeadLetter. It produces each invalid record to topic
	// with its key, value, timestamp and headers untouched, plus the
	// sluice.dlq.* headers ([HeaderTopic] and the others) naming the
	// original topic, partition, offset, the error text and the stage. Run
	// calls it from each partition's dead-letter goroutine, so calls for
	// different partitions overlap. Within Run a call returns as soon as
	// the client took the message: a partition's dead letters go out in
	// offset order, up to 1024 in flight, and the record's offset commits
	// only after its delivery report succeeded. Called outside Run, or
	// when Run retries a failed dead letter, a call returns once the
	// report arrived (or Close gave up on the message). A delivery failure
	// is returned and stops Run: a bad record is never dropped silently. A
	// full producer buffer is waited out. Failures that cannot heal are
	// marked sluice.Permanent, so Run stops at once (the producer closed,
	// a message too large, an unknown topic, bad credentials; each
	// backend lists its own); others (a delivery that timed out) are
	// retried under Run's retry policy once the reports of the dead
	// letters in flight with it arrived. On a revoke, the dead letters
	// already handed over are still waited for before the partition's
	// final commit. The whole policy: docs/production.md, "Dead letters".
	//
	// The result's CheckStart, which pipeline.Run calls before the
	// source starts, is an error for an empty topic or one that does not
	// exist (unless the producer's config skips topic checks); without
	// that check an empty topic fails every call with a permanent error.
	DeadLetter(topic string) DeadLetterFunc

	// Close flushes what is still outstanding, for up to the producer's
	// close timeout, and closes the producer. Messages still undelivered
	// then are given up on: their deliveries fail (with an error wrapping
	// [ErrClosed]), so the records they came from are never
	// committed, and Close returns a *sluice.CloseError that counts and
	// names them. Close returns within the close timeout plus at most two
	// seconds, also when the client's own close would hang.
	//
	// Call it after pipeline.Run returned: every Produce stage and dead
	// letter has then been reported and Close has nothing to wait for.
	// Calling it while Run is still running is safe: later produce calls
	// fail with [ErrClosed], outstanding ones as above, and Run stops with
	// that error unless the partition was already being taken away. Close
	// is idempotent: later calls wait for the first and return its
	// result.
	Close() error
}

// Produce ends a graph by producing one message per value to topic with
// p, in order. A value's records commit only after its delivery report
// succeeded. A full producer buffer is backpressure (the stage waits for
// deliveries), never a drop. Each stage keeps a bounded number of
// messages outstanding: its share of the producer's buffer
// (kgo.MaxBufferedRecords, librdkafka's queue.buffering.max.messages)
// among the Produce stages running when it starts, at least 1,024 and at
// most 16,384; the client's delivery reports never wait for a stage. A
// delivery that fails after the client's own retries (and
// its delivery timeout: librdkafka's message.timeout.ms,
// franz.ProducerConfig.DeliveryTimeout) stops pipeline.Run with a
// *sluice.StageError naming the topic and the record's position.
//
// toMsg is called like any stage function: timed for hooks, watched by
// the stuck detector, retried under the stage's retry policy on a
// transient error, a panic reported at the record's offset; an error
// marked with sluice.Invalid dead-letters the record. With a franz-go
// producer (franz.NewProducer, franz.NewTransactionalProducer) the stage
// calls toMsg for the values of the chunk at hand and hands the converted
// messages to kgo in as few calls as there is room for (one closed
// check, one clock read and one update of the counters the stages share
// per call), before a value whose toMsg failed is failed and at the
// chunk's end: a message reaches kgo once toMsg returned for the values
// after it in the chunk, as a Map stage sends its chunk on. With the
// other producers each message goes to the client once toMsg returned
// for it. Either way the messages go out in the order of their values.
//
// On a graceful revoke the stage waits for the delivery reports of
// everything it produced. When the partition is lost or its drain times
// out, it produces nothing more (not even the rest of the chunk at hand;
// a produce waiting for buffer room returns) and still waits for
// outstanding reports (bounded by the delivery timeout, or by p.Close) so
// none is left behind; if that takes longer than the exit grace (see
// pipeline.Run), the runtime abandons the stage, which goes on reading the
// reports, and Run stops with sluice.ErrAbandoned. Once p is closed, the
// stage fails with an error wrapping [ErrClosed].
//
// A nil p, an empty topic or a nil toMsg fails the build with a
// *sluice.BuildError naming the stage; so does a p created while this
// graph was being built (a NewProducer called inside the builder: one
// client per partition, never closed), a zero Producer value (not made by
// its constructor), and a topic that does not exist (looked up when the
// first graph using it is built, unless the producer's config skips topic
// checks). Options: stages.Name, stages.Buffer, stages.Retry (for toMsg).
func Produce[T any](in pipeline.Stream[T], p Producer, topic string, toMsg func(T) (Message, error), opts ...stages.CallOption) pipeline.End {
	return produce.Stage(in, "sink.Produce", p, topic, toMsg, opts)
}
