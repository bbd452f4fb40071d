package source

import (
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/internal/headers"
)

// TestToRecordCopiesEveryField converts messages with headers: every field
// arrives, each record has headers of its own, and the header slices of 64
// records cost fewer allocations than one per record.
func TestToRecordCopiesEveryField(t *testing.T) {
	topic := "orders"
	ts := time.Unix(1700000000, 0)
	msg := func(off int64) *kafka.Message {
		return &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 3, Offset: kafka.Offset(off)},
			Key:            []byte("k"), Value: []byte("v"), Timestamp: ts,
			Headers: []kafka.Header{{Key: "trace", Value: []byte("t1")}, {Key: "span", Value: []byte("s1")}},
		}
	}
	var hdrs headers.Slab
	a, b := toRecord(msg(7), &hdrs), toRecord(msg(8), &hdrs)
	if a.Topic != "orders" || a.Partition != 3 || a.Offset != 7 || string(a.Key) != "k" || string(a.Value) != "v" ||
		!a.Timestamp.Equal(ts) || len(a.Headers) != 2 || a.Headers[1].Key != "span" || string(a.Headers[1].Value) != "s1" {
		t.Fatalf("converted %+v", a)
	}
	a.Headers = append(a.Headers, a.Headers[0]) // must not write into b's headers
	if b.Offset != 8 || b.Headers[0].Key != "trace" {
		t.Fatalf("second record %+v", b)
	}
	msgs := make([]*kafka.Message, 64)
	for i := range msgs {
		msgs[i] = msg(int64(i))
	}
	allocs := testing.AllocsPerRun(20, func() {
		for _, m := range msgs {
			_ = toRecord(m, &hdrs)
		}
	})
	if allocs > 2 {
		t.Fatalf("%v allocations to convert the headers of 64 records, want at most 2", allocs)
	}
}
