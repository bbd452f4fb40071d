package franz

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestStuckPartitionDoesNotStallOthers: one partition's graph is stuck
// (the partition of the first record processed: its records wait for the
// test), so the runtime pauses it; the other partitions of the member
// must still be consumed to the end meanwhile. The source takes nothing
// from kgo while it holds its share (max(128, N/8) records, about B/8
// bytes), so what it keeps of one paused partition must not fill that
// share: docs/lifecycle.md ("Backpressure") says it takes several paused
// partitions to fill it.
//
// Each partition is produced alone, so that its log is a few large
// batches (a broker answers a fetch with whole batches): the fetch that
// brings the stuck partition's first records brings many more of it.
//
// "records": WithMaxInFlight(1000), 100-byte values (a share of 128
// records). "bytes": WithMaxInFlightBytes(1 MiB), 1000-byte values (a
// share of 128 KiB, about 100 records).
func TestStuckPartitionDoesNotStallOthers(t *testing.T) {
	for _, c := range []struct {
		name  string
		value int
		opt   pipeline.Option
	}{
		{"records", 100, pipeline.WithMaxInFlight(1000)},
		{"bytes", 1000, pipeline.WithMaxInFlightBytes(1 << 20)},
	} {
		t.Run(c.name, func(t *testing.T) { stuckPartition(t, c.value, c.opt) })
	}
}

func stuckPartition(t *testing.T, valueSize int, limit pipeline.Option) {
	const (
		partitions = 4
		perPart    = 2000
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("stuck", partitions))
	producePartitionByPartition(t, b, "stuck", partitions, perPart, valueSize)
	src := newTestSource(t, b, "g-stuck", "stuck")
	peaks := &srcPeaks{}
	src.polled = peaks.polled
	release := make(chan struct{})
	var stuck atomic.Int32 // the partition of the first record processed
	stuck.Store(-1)
	var mu sync.Mutex
	got := map[int32][]int64{}
	run := testkit.Start(t, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			stuck.CompareAndSwap(-1, r.Partition)
			if r.Partition == stuck.Load() {
				select {
				case <-release:
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			got[r.Partition] = append(got[r.Partition], r.Offset)
			return nil
		})
	}, limit, pipeline.WithPartitionQueue(16))
	others := func() (done int) {
		mu.Lock()
		defer mu.Unlock()
		for p := range int32(partitions) {
			if p != stuck.Load() {
				done += len(got[p])
			}
		}
		return done
	}
	// The other partitions take a few seconds at most when nothing is
	// stuck; a minute is the deadline.
	deadline := time.Now().Add(time.Minute)
	for others() < (partitions-1)*perPart {
		if time.Now().After(deadline) {
			close(release)
			_ = run.Stop(t)
			t.Fatalf("with partition %d stuck, the other partitions processed %d of their %d records in a minute (the source held up to %+v)",
				stuck.Load(), others(), (partitions-1)*perPart, peaks.get())
		}
		select {
		case <-run.Done():
			t.Fatalf("Run returned %v", run.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(release)
	b.WaitCommitted(t, "g-stuck", "stuck", map[int32]int64{0: perPart, 1: perPart, 2: perPart, 3: perPart})
	if err := run.Stop(t); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	checkEveryOffsetInOrder(t, got, partitions, perPart)
}

// producePartitionByPartition produces perPart records of valueSize bytes
// to each of the partitions of topic, one partition after the other, so
// that each partition's log is a few large batches (a broker answers a
// fetch with whole batches).
func producePartitionByPartition(t *testing.T, b *kafkatest.Broker, topic string, partitions, perPart, valueSize int) {
	t.Helper()
	value := make([]byte, valueSize)
	for p := range int32(partitions) {
		recs := make([]sluice.Record, perPart)
		for i := range recs {
			recs[i] = sluice.Record{Partition: p, Key: fmt.Appendf(nil, "%d-%d", p, i), Value: value}
		}
		b.Produce(t, topic, recs...)
	}
}
