// Package sink writes a graph's results to Kafka, whichever client
// produces them: the producer contract ([Producer]), the one Produce stage
// ([Produce]), which commits each input only after its delivery report
// succeeded, and the dead-letter destination's type ([DeadLetterFunc])
// for records marked with sluice.Invalid.
//
// The producers live with their client: confluent.NewProducer (package
// sink/confluent, confluent-kafka-go, cgo) and franz.NewProducer (package
// franz, franz-go, pure Go); testkit.NewProducer is a fake for unit tests.
// Each returns a type that implements Producer, so a program names its
// client in one place, where it creates the producer, and passes a
// Producer everywhere else. [TransactionConfig] is the client-independent
// half of both transactional producers' configuration
// (confluent.TransactionalConfig and franz.TransactionalConfig embed it).
// This package imports no Kafka client.
//
// One Producer is shared by every partition's graph: create it before
// pipeline.Run and close it after Run returned. Close waits a bounded time
// for outstanding deliveries and reports the ones it gave up on.
package sink
