// Package librdkafka holds what the two packages on confluent-kafka-go
// (source and sink/confluent) share about librdkafka: how configuration
// overrides are converted and logged, how topics are looked up for the
// start checks, and how sink/confluent reaches a source's exactly-once slot
// ([SourceSlot]). Package franz never imports it (it would link cgo).
package librdkafka
