// Package kafkatest is an in-process Kafka-protocol broker for tests and
// examples: [NewBroker] starts franz-go's kfake on loopback, with helpers
// to create topics, produce records, read them back and inspect committed
// offsets; pair it with testkit.Start to run a pipeline on source.NewKafka.
// kfake implements the Kafka protocol but is not Kafka: a test that
// depends on a detail where they differ should say so.
//
// It is a package of its own so that unit tests that use only testkit's
// fake source and harness link none of franz-go.
package kafkatest
