package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// largeTopicMaxBytes is the max.message.bytes of the topics of records
// larger than librdkafka's prefetch queue (1 MiB at the default budget).
const largeTopicMaxBytes = 8 << 20

// largeValue returns a value of n bytes that names its partition and its
// index in the partition in its first 12 bytes and is filled after them
// with a pattern of both, so that a truncated or mixed-up value is seen.
func largeValue(p int32, i, n int) []byte {
	v := make([]byte, n)
	binary.BigEndian.PutUint32(v, uint32(p))
	binary.BigEndian.PutUint64(v[4:], uint64(i))
	for j := 12; j < n; j++ {
		v[j] = byte(int(p)*31 + i + j)
	}
	return v
}

// largeProducer returns a kgo producer to b that writes records of up to
// largeTopicMaxBytes, each to its Partition, uncompressed: the bytes on
// the wire are the bytes of the values, which fetch.max.bytes limits.
func largeProducer(t testing.TB, b *kafkatest.Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(b.Addrs()...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(largeTopicMaxBytes - 1024),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceSizes writes to every partition of topic one record per entry of
// sizes, in order, each size its value's length; an entry of a run of
// small records is produced in one call so that they share batches, and
// each large record (over 64 KiB) is produced on its own, in a batch of
// its own. It returns the values by partition and offset.
func produceSizes(t testing.TB, cl *kgo.Client, topic string, parts int32, sizes []int) map[int32][][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vals := make(map[int32][][]byte, parts)
	var small []*kgo.Record
	flush := func() {
		if len(small) == 0 {
			return
		}
		if err := cl.ProduceSync(ctx, small...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		small = small[:0]
	}
	for i, n := range sizes {
		for p := range parts {
			v := largeValue(p, i, n)
			vals[p] = append(vals[p], v)
			r := &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "%d-%d", p, i), Value: v}
			if n <= 64<<10 {
				small = append(small, r)
				continue
			}
			flush()
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %d bytes to partition %d: %v", n, p, err)
			}
		}
	}
	flush()
	return vals
}

// valueChecker counts each offset's processings and checks each record's
// value against what was produced.
type valueChecker struct {
	*offsets
	vals map[int32][][]byte
	bad  atomic.Int64
}

func (c *valueChecker) see(t testing.TB, r sluice.Record) {
	want := c.vals[r.Partition][r.Offset]
	if !bytes.Equal(r.Value, want) {
		if c.bad.Add(1) <= 5 {
			t.Errorf("partition %d offset %d: value of %d bytes differs from the %d produced", r.Partition, r.Offset, len(r.Value), len(want))
		}
	}
	c.add(r.Partition, r.Offset)
}

// largeAndSmallSizes: records of 1.5 MiB and 3 MiB (larger than the
// prefetch queue at the default budget, and than librdkafka's
// fetch.max.bytes, which it lowers to the queue) between runs of small
// ones; two large records in a row, and a large one first and last; and
// a run of 150 records of 32 KiB, produced together, whose batches hold
// several MiB (compressed, far less on the wire).
func largeAndSmallSizes() []int {
	const small, mid, big = 100, 3 << 19, 3 << 20
	var s []int
	s = append(s, big)
	for range 150 {
		s = append(s, 32<<10)
	}
	for range 3 {
		for range 40 {
			s = append(s, small)
		}
		s = append(s, mid, big, small, mid)
	}
	return append(s, big)
}

// largeCase is one way of writing and reading the records of
// TestPrefetchRecordsLargerThanTheQueue.
type largeCase struct {
	name      string
	produce   []kgo.Opt      // after largeProducer's
	overrides map[string]any // the source's Overrides
}

var largeCases = []largeCase{
	{name: "default"},
	// Batches that decompress to far more than the queue and than the
	// fetch.max.bytes that bounded them on the wire.
	{name: "zstd", produce: []kgo.Opt{kgo.ProducerBatchCompression(kgo.ZstdCompression())}},
	{name: "lz4", produce: []kgo.Opt{kgo.ProducerBatchCompression(kgo.Lz4Compression())}},
	{name: "snappy", produce: []kgo.Opt{kgo.ProducerBatchCompression(kgo.SnappyCompression())}},
	// Overrides of the prefetch: a queue of 64 KiB, fetch.max.bytes at
	// librdkafka's floor (message.max.bytes), and one far above the queue.
	{name: "queue-64KiB", overrides: map[string]any{"queued.max.messages.kbytes": 64}},
	{name: "fetch-max-1MB", overrides: map[string]any{"fetch.max.bytes": 1000000}},
	{name: "fetch-max-50MiB", overrides: map[string]any{"fetch.max.bytes": 50 << 20}},
}

// TestPrefetchRecordsLargerThanTheQueue: records larger than librdkafka's
// prefetch queue (1 MiB at the default budget) and than the fetch.max.bytes
// librdkafka derives from it, mixed with small ones, on four partitions;
// uncompressed, compressed (the small ones then share batches that
// decompress to several MiB), and with Overrides of the queue and of
// fetch.max.bytes. A broker returns a batch larger than the request's
// limit when it is the first of the response, so the consumer keeps making
// progress: every record is processed exactly once, in order, with its
// whole value, and the group commits the high watermarks.
func TestPrefetchRecordsLargerThanTheQueue(t *testing.T) {
	eachCase(t, largeCases, func(c largeCase) string { return c.name }, largeRecordsRun)
}

func largeRecordsRun(t *testing.T, lc largeCase) {
	const parts = 4
	b := kafkatest.NewBroker(t)
	topic, group := "prefetch-large-"+lc.name, "prefetch-large-"+lc.name+"-g"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.CreateTopicContext(ctx, topic, parts, map[string]string{"max.message.bytes": fmt.Sprint(largeTopicMaxBytes)}); err != nil {
		t.Fatal(err)
	}
	vals := produceSizes(t, largeProducer(t, b, lc.produce...), topic, parts, largeAndSmallSizes())
	hw := b.HighWatermarks(t, topic)
	vc := &valueChecker{offsets: newOffsets(hw), vals: vals}
	next := make([]int64, parts) // each partition's stage runs on its own goroutine
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			if r.Offset != next[r.Partition] {
				t.Errorf("partition %d: processed offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition] = r.Offset + 1
			vc.see(t, r)
			return nil
		})
	}
	src := newSource(t, b, group, topic, lc.overrides)
	began := time.Now()
	c := startConsumer(t, lc.name, src, build)
	waitFor(t, fmt.Sprintf("commits at the high watermarks %v", hw), func() bool {
		got, err := b.CommittedContext(t.Context(), group, topic)
		return err == nil && maps.Equal(got, hw)
	}, c)
	t.Logf("%v: %d records, all committed after %v", b.Kind(), vc.total.Load(), time.Since(began))
	c.stop(t)
	if dups := vc.offsets.check(t); dups != 0 {
		t.Errorf("%d duplicate processings, want none (one consumer, no rebalance)", dups)
	}
}
