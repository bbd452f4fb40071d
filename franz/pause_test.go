package franz

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// fetchedRecords is a kgo hook counting the records of every batch the
// client fetched.
type fetchedRecords struct{ n atomic.Int64 }

func (f *fetchedRecords) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	f.n.Add(int64(m.NumRecords))
}

// TestPausedPartitionsRecordsNotFetchedAgain: partitions paused by the
// in-flight limit while a graph holds every record still have every
// record delivered once and in order, and kgo fetches few records twice.
// A broker answers a fetch with whole batches, and kgo strips a paused
// partition's buffered records and fetches them again on resume, so what
// a pause costs is the rest of the partition's batch; the source takes
// kgo's buffered records before it pauses a partition, and takes nothing
// from kgo while the runtime's budget is full (a delivery then only
// pauses its partition).
//
// The topic is written in batches of a set size, so that the count does
// not depend on how a producer happened to batch (with a 1 ms linger,
// 3000 records of a partition were 2 batches without the race detector
// and 20 to 30 with it). "large": a batch of 3000 records a partition
// (about 350 KB), 23 times the source's share of held records (128 at
// WithMaxInFlight(1000)), as a producer with a 1 MB batch limit writes
// 100-byte values. "small": batches of 100 records, below the share.
func TestPausedPartitionsRecordsNotFetchedAgain(t *testing.T) {
	for _, perBatch := range []int{3000, 100} {
		name := map[int]string{3000: "large", 100: "small"}[perBatch]
		t.Run(name, func(t *testing.T) { pausedNotFetchedAgain(t, perBatch) })
	}
}

func pausedNotFetchedAgain(t *testing.T, perBatch int) {
	const partitions, perPart, limit = 4, 3000, 1000
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("refetch", partitions))
	n := produceInBatches(t, b, "refetch", partitions, perPart, perBatch)
	fetched := &fetchedRecords{}
	src := newTestSource(t, b, "g-refetch", "refetch", kgo.WithHooks(fetched))
	pc := &pauseCounter{paused: map[sluice.TopicPartition]bool{}}
	var mu sync.Mutex
	got := map[int32][]int64{}
	var done atomic.Int64
	release := make(chan struct{})
	run := testkit.Start(t, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			mu.Lock()
			defer mu.Unlock()
			got[r.Partition] = append(got[r.Partition], r.Offset)
			done.Add(1)
			return nil
		})
	}, pipeline.WithMaxInFlight(limit), pipeline.WithHooks(pc))
	run.WaitUntil(t, "a partition paused", func() bool { return pc.count() > 0 })
	after := pc.polls.Load() + 50
	run.WaitUntil(t, "50 polls after the pauses", func() bool { return pc.polls.Load() >= after })
	close(release)
	run.WaitUntil(t, "every record done", func() bool { return done.Load() == int64(n) })
	if err := run.Stop(t); err != nil {
		t.Fatal(err)
	}
	checkEveryOffsetInOrder(t, got, partitions, perPart)
	if pc.count() == 0 {
		t.Fatal("no partition was paused: the test did not exercise a pause")
	}
	// A pause still costs the rest of the batch the partition was in when
	// the source had no spare room for it (the source takes kgo's buffer
	// up to half its share, an eighth of the limit), and what a fetch in
	// flight at the pause brought of it.
	fetchedN := fetched.n.Load()
	t.Logf("kgo fetched %d records for the %d of the topic (batches of %d)", fetchedN, n, perBatch)
	if fetchedN > int64(n)*2 {
		t.Errorf("kgo fetched %d records for the %d of the topic; want at most twice the topic", fetchedN, n)
	}
}

// produceInBatches writes perPart records of 100-byte values to each of
// topic's partitions, in batches of perBatch records (a divisor of
// perPart), and returns how many it wrote: the records of each round are
// buffered by a producer that lingers a minute (longer than it takes), then flushed,
// so that each partition's part of a round is one batch.
func produceInBatches(t *testing.T, b *kafkatest.Broker, topic string, partitions, perPart, perBatch int) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Minute), kgo.MaxBufferedRecords(2*partitions*perBatch))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	value := make([]byte, 100)
	var failed atomic.Pointer[error]
	for i := 0; i < perPart; i += perBatch {
		for p := range int32(partitions) {
			for j := i; j < i+perBatch; j++ {
				r := &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "%d-%d", p, j), Value: value}
				cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.CompareAndSwap(nil, &err)
					}
				})
			}
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := failed.Load(); err != nil {
		t.Fatal(*err)
	}
	return partitions * perPart
}
