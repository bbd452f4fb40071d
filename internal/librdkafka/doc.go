// Package librdkafka holds what the two packages on confluent-kafka-go
// (source and sink/confluent) share about librdkafka: how configuration
// overrides are converted and logged, how topics are looked up for the
// start checks, how sink/confluent reaches a source's exactly-once slot
// ([SourceSlot]), and how tests wait for a source's background client calls
// ([SourceBackground]). Package franz never imports it (it would link cgo).
package librdkafka
