package franz

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
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
// partition's buffered records when it is polled and fetches them again
// on resume, so what taking a partition's records when the runtime's
// budget is full costs is the rest of that partition's batch: the
// delivery only pauses the partition. The source takes nothing from kgo
// while the budget is full (saturated), so kgo keeps its buffer whole.
//
// The topic is written as one batch of 3000 records a partition (about
// 350 KB, 23 times the source's share of 128 held records at
// WithMaxInFlight(1000)), as a producer with a 1 MB batch limit writes
// 100-byte values. The layout is set, not left to a producer's linger:
// how many records a lingering producer puts in a batch depends on how
// fast it is fed (the race detector makes batches a tenth as large), and
// with small batches a partition taken while the budget is full costs
// little. Taking records while the budget is full fetched this topic 3.25
// to 4.75 times; taking none, once (a fetch in flight when the budget
// fills may still be read again).
func TestPausedPartitionsRecordsNotFetchedAgain(t *testing.T) {
	notFetchedAgain(t, func(_ *testing.T, src *Source) sluice.Source { return src })
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
	value := make([]byte, 100)
	produceRounds(t, cl, int32(partitions), perPart, perBatch, func(p int32, j int) *kgo.Record {
		return &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "%d-%d", p, j), Value: value}
	})
	return partitions * perPart
}
