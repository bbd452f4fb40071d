// Package librdkafka holds what the two packages on confluent-kafka-go
// (source and sink) share about librdkafka: how configuration overrides
// are converted and logged, and how topics are looked up for the start
// checks. Package franz never imports it (it would link cgo).
package librdkafka
