// Package sink writes a graph's results to Kafka with confluent-kafka-go:
// a terminal stage that produces records and commits each input only after
// its delivery report succeeded, and the dead-letter destination for
// records marked with sluice.Invalid.
//
// One [Producer] is shared by every partition's graph: create it before
// pipeline.Run and close it after Run returned. Close waits a bounded time
// for outstanding deliveries and reports the ones it gave up on.
package sink
