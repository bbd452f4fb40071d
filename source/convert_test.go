package source

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/internal/headers/convtest"
)

// TestToRecordCopiesEveryField converts librdkafka messages with headers:
// every field arrives, each record has headers of its own, and the header
// slices of 64 records cost fewer allocations than one per record.
func TestToRecordCopiesEveryField(t *testing.T) {
	convtest.CheckToRecord(t, func(r convtest.Record) *kafka.Message {
		m := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &r.Topic, Partition: r.Partition, Offset: kafka.Offset(r.Offset)},
			Key:            r.Key, Value: r.Value, Timestamp: r.Timestamp,
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		return m
	}, toRecord)
}
