package kafkatest

import (
	"bytes"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
)

func TestBrokerProduceReadAll(t *testing.T) {
	b := NewBroker(t, WithTopic("seeded", 2))
	b.CreateTopic(t, "t", 3)
	ts := time.UnixMilli(time.Now().UnixMilli()) // recent: Apache Kafka deletes records older than its retention
	var recs []sluice.Record
	for i := range 30 {
		recs = append(recs, sluice.Record{
			Partition: int32(i % 3), Key: []byte{byte(i)}, Value: []byte{byte(i), 1},
			Headers: []sluice.Header{{Key: "h", Value: []byte{byte(i)}}}, Timestamp: ts,
		})
	}
	b.Produce(t, "t", recs...)
	got := b.ReadAll(t, "t")
	if len(got) != 30 {
		t.Fatalf("ReadAll: %d records, want 30", len(got))
	}
	for i, r := range got {
		p, o := int32(i/10), int64(i%10)
		want := recs[int(o)*3+int(p)]
		if r.Topic != "t" || r.Partition != p || r.Offset != o || !bytes.Equal(r.Key, want.Key) ||
			!bytes.Equal(r.Value, want.Value) || len(r.Headers) != 1 || !bytes.Equal(r.Headers[0].Value, want.Headers[0].Value) ||
			!r.Timestamp.Equal(ts) {
			t.Fatalf("record %d = %+v, want partition %d offset %d of %+v", i, r, p, o, want)
		}
	}
	hw := b.HighWatermarks(t, "t")
	if len(hw) != 3 || hw[0] != 10 || hw[1] != 10 || hw[2] != 10 {
		t.Errorf("HighWatermarks = %v", hw)
	}
	if c := b.Committed(t, "nobody", "t"); len(c) != 0 {
		t.Errorf("Committed of unknown group = %v", c)
	}
	if got := b.ReadAll(t, "seeded"); len(got) != 0 {
		t.Errorf("ReadAll of empty topic = %d records", len(got))
	}
	if n := b.Fill(t, "seeded", 100, 10); n != 200 || b.HighWatermarks(t, "seeded")[1] != 100 {
		t.Errorf("Fill = %d, high watermarks %v", n, b.HighWatermarks(t, "seeded"))
	}
}
