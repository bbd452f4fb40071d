// Package testkit is for testing Sluice pipelines: your builder, your stage
// functions, and what they do on rebalances, errors and bad input.
//
// Three levels, from the fastest to the most realistic:
//
//   - [Harness] runs pipeline.Run over an in-memory source for one test:
//     Send records (SendMessages with keys and headers, SendRecords with
//     every field, numbering the offsets left 0), Assign, Revoke or Lose
//     partitions, then WaitCommitted and check the exact committed
//     offsets. It needs no broker and works inside testing/synctest
//     bubbles, where timers (a Batch's maxWait, retries' backoff, the
//     drain timeout) fire instantly and every wait is deterministic. Stop returns Run's error; a test that never looks
//     at it (Stop or Wait) is failed at cleanup when Run failed.
//   - [Fake] is that in-memory source on its own, a sluice.Source whose
//     consumer-group assignment the test drives, for tests that call
//     pipeline.Run themselves (or through [Start]).
//   - Package testkit/kafkatest starts a broker, for tests of either
//     client's source and producer (source.NewSource and
//     confluent.NewProducer, franz.NewSource and franz.NewProducer)
//     against the real protocol: franz-go's in-process kfake by default, Apache Kafka with
//     SLUICE_TEST_BROKER=apache. It is slower (seconds per test); it is a
//     package of its own so that tests using only testkit link no Kafka
//     client.
//
// # Graphs that produce to Kafka
//
// sink.Produce takes any sink.Producer. A [Producer] is one that needs no
// broker: a fake that records the messages and dead letters (and can be
// told to fail deliveries with [Producer.FailWith]). Give your builder the
// producer as a sink.Producer, the Kafka one (confluent.NewProducer,
// franz.NewProducer) in the program and a testkit.Producer in its tests,
// and the graph is tested as it runs (see ExampleProducer).
//
// [DeadLetters] is a dead-letter destination that records what it gets
// (and can be told to fail), to assert which records a pipeline rejected,
// from which stage and why. [Start] runs pipeline.Run in the background
// for the length of a test with any source; [Running.WaitUntil] waits for
// state outside the process, and [Running.WaitCommitted] for a group's
// exact committed offsets, read from a broker or wherever the source
// commits.
//
// Package testkit/sourcetest checks that a sluice.Source keeps the
// contract the runtime relies on; it is for people who write sources.
//
// Every helper that takes a testing.TB fails the test on misuse or
// timeout ([WaitTimeout]) instead of returning an error, and cleans up
// at the end of the test: nothing it starts outlives the test.
package testkit
