package franz

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// GetRecords hands out empty slices of at least the capacity asked for:
// a power of two up to 1<<maxRecordClass, exactly n beyond; PutRecords
// takes any slice back without failing.
func TestRecordPoolCapacities(t *testing.T) {
	p := new(recordPool)
	for _, c := range []struct{ n, want int }{{0, 1}, {1, 1}, {2, 2}, {3, 4}, {500, 512}, {512, 512}, {1 << 16, 1 << 16}, {1<<16 + 1, 1<<16 + 1}} {
		s := p.GetRecords(c.n)
		if len(s) != 0 || cap(s) != c.want {
			t.Errorf("GetRecords(%d): len %d cap %d, want len 0 cap %d", c.n, len(s), cap(s), c.want)
		}
		p.PutRecords(s[:cap(s)])
	}
	p.PutRecords(nil)
	if s := p.GetRecords(100); len(s) != 0 || cap(s) != 128 {
		t.Errorf("GetRecords(100) after puts: len %d cap %d, want len 0 cap 128", len(s), cap(s))
	}
}

// The source recycles kgo's records as it converts them, and kgo reuses
// their slices for later fetches: records a graph still holds keep their
// keys, values and headers intact. A Batch holds each partition's records
// until all of them arrived (many fetches later), then every field is
// compared with what was produced.
func TestRecycledRecordsKeepTheirBytes(t *testing.T) {
	const partitions, perPart = 4, 2000
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("recycled", partitions))
	var recs []sluice.Record
	for p := range int32(partitions) {
		for i := range perPart {
			recs = append(recs, sluice.Record{Partition: p, Key: fmt.Appendf(nil, "k-%d-%d", p, i),
				Value:   fmt.Appendf(nil, "value-%d-%d-%0100d", p, i, i),
				Headers: []sluice.Header{{Key: fmt.Sprintf("h-%d", i), Value: fmt.Appendf(nil, "hv-%d-%d", p, i)}}})
		}
	}
	b.Produce(t, "recycled", recs...)
	var mu sync.Mutex
	var bad []string
	checked := make(chan int, partitions)
	run := testkit.Start(t, newTestSource(t, b, "g-recycled", "recycled"), func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(stages.Batch(in, perPart, 0), func(_ context.Context, batch []sluice.Record) error {
			for i, r := range batch {
				key, value := fmt.Sprintf("k-%d-%d", r.Partition, i), fmt.Sprintf("value-%d-%d-%0100d", r.Partition, i, i)
				hk, hv := fmt.Sprintf("h-%d", i), fmt.Sprintf("hv-%d-%d", r.Partition, i)
				if r.Offset != int64(i) || string(r.Key) != key || string(r.Value) != value ||
					len(r.Headers) != 1 || r.Headers[0].Key != hk || string(r.Headers[0].Value) != hv {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("%d/%d: key %q value %.20q headers %v", r.Partition, r.Offset, r.Key, r.Value, r.Headers))
					mu.Unlock()
				}
			}
			checked <- len(batch)
			return nil
		})
	})
	for range partitions {
		select {
		case n := <-checked:
			if n != perPart {
				t.Fatalf("a batch of %d records, want %d", n, perPart)
			}
		case <-run.Done():
			t.Fatalf("Run returned %v before every partition's batch was checked", run.Err())
		}
	}
	if err := run.Stop(t); err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("%d records changed after their kgo records were recycled, first: %s", len(bad), bad[0])
	}
}
