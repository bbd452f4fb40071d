// Package testkit is for testing Sluice pipelines: your builder, your stage
// functions, and what they do on rebalances, errors and bad input.
//
// Three levels, from the fastest to the most realistic:
//
//   - [Harness] runs pipeline.Run over an in-memory source for one test:
//     Send records, Assign, Revoke or Lose partitions, then WaitCommitted
//     and check the exact committed offsets. It needs no broker and works
//     inside testing/synctest bubbles, where timers (a Batch's maxWait,
//     retries' backoff, the drain timeout) fire instantly and every wait
//     is deterministic. Stop returns Run's error; a test that never looks
//     at it (Stop or Wait) is failed at cleanup when Run failed.
//   - [Fake] is that in-memory source on its own, a pipeline.Source whose
//     consumer-group assignment the test drives, for tests that call
//     pipeline.Run themselves (or through [Start]).
//   - Package testkit/kafkatest has an in-process Kafka-protocol broker
//     (franz-go's kfake), for tests of source.NewKafka and the sink package
//     against the real protocol. It is slower (seconds) and differs from
//     Kafka in places. It is a package of its own so that tests using only
//     testkit link no Kafka client.
//
// [DeadLetters] is a dead-letter destination that records what it gets
// (and can be told to fail), to assert which records a pipeline rejected,
// from which stage and why. [Start] runs pipeline.Run in the background
// for the length of a test with any source; [Running.WaitUntil] waits for
// state outside the process, such as a broker's committed offsets.
//
// Package testkit/sourcetest checks that a pipeline.Source keeps the
// contract the runtime relies on; it is for people who write sources.
//
// Every helper that takes a testing.TB fails the test on misuse or
// timeout ([WaitTimeout]) instead of returning an error, and cleans up
// at the end of the test: nothing it starts outlives the test.
package testkit
