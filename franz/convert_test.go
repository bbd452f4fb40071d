package franz

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/internal/headers/convtest"
)

// TestToRecordCopiesEveryField converts kgo records with headers: every
// field arrives, each record has headers of its own, and the header
// slices of 64 records cost fewer allocations than one per record.
func TestToRecordCopiesEveryField(t *testing.T) {
	convtest.CheckToRecord(t, func(r convtest.Record) *kgo.Record {
		kr := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		return kr
	}, toRecord)
}
