// Package confluent is the producer of Sluice on confluent-kafka-go
// (librdkafka, cgo): [NewProducer] and, for exactly-once
// consume-transform-produce with a source.Source, [NewTransactionalProducer].
// Both return a [*Producer], which implements sink.Producer: pass it to
// sink.Produce, and its DeadLetter to pipeline.WithDeadLetter. The
// franz-go twin is franz.NewProducer; a program that switches clients
// changes only the constructor it calls.
//
// One [Producer] is shared by every partition's graph: create it before
// pipeline.Run and close it after Run returned. Close waits a bounded time
// for outstanding deliveries and reports the ones it gave up on.
package confluent
