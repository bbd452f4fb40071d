package franz

import (
	"bytes"
	"context"
	"errors"
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

// The records of pooledContent: what record j of partition p holds, so
// that a record can be checked against its offset alone. Every fifth key
// is null, every thirteenth value is null (a tombstone), every 97th value
// is 40 KB, the others 20 to 69 bytes; records have no, one or two
// headers (the second one's value null); timestamps differ per record.
func pooledKey(p int32, j int) []byte {
	if j%5 == 0 {
		return nil
	}
	return fmt.Appendf(nil, "k-%d-%d", p, j)
}

func pooledValue(p int32, j int) []byte {
	if j%13 == 0 {
		return nil
	}
	size := 20 + j%50
	if j%97 == 0 {
		size = 40 << 10
	}
	v := fmt.Appendf(nil, "v-%d-%d-", p, j)
	for len(v) < size {
		v = append(v, byte('a'+(j+int(p))%26))
	}
	return v
}

func pooledHeaders(p int32, j int) []sluice.Header {
	switch j % 3 {
	case 1:
		return []sluice.Header{{Key: fmt.Sprintf("h-%d", j), Value: fmt.Appendf(nil, "hv-%d-%d", p, j)}}
	case 2:
		return []sluice.Header{{Key: "a", Value: fmt.Appendf(nil, "a-%d-%d", p, j)}, {Key: fmt.Sprintf("n-%d", p)}}
	}
	return nil
}

func pooledTime(p int32, j int) time.Time {
	return time.UnixMilli(1_700_000_000_000 + int64(p)*10_000_000 + int64(j))
}

// produceContent writes perPart records of pooledContent to each of
// topic's partitions, in batches of about perBatch records a partition
// (the producer lingers a minute and is flushed after each round), with
// compression or without.
func produceContent(t *testing.T, b *kafkatest.Broker, topic string, partitions int32, perPart, perBatch int, compress bool) {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Minute), kgo.MaxBufferedRecords(2 * int(partitions) * perBatch), kgo.ProducerBatchMaxBytes(4 << 20)}
	if compress {
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	} else {
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produceRounds(t, cl, partitions, perPart, perBatch, func(p int32, j int) *kgo.Record {
		r := &kgo.Record{Topic: topic, Partition: p, Key: pooledKey(p, j), Value: pooledValue(p, j), Timestamp: pooledTime(p, j)}
		for _, h := range pooledHeaders(p, j) {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		return r
	})
}

// contentDiff returns how r differs from what pooledContent put at its
// offset, or "".
func contentDiff(topic string, r sluice.Record) string {
	j := int(r.Offset)
	key, value, hdrs := pooledKey(r.Partition, j), pooledValue(r.Partition, j), pooledHeaders(r.Partition, j)
	same := func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
	switch {
	case r.Topic != topic:
		return fmt.Sprintf("topic %q", r.Topic)
	case !same(r.Key, key):
		return fmt.Sprintf("key %q, want %q", r.Key, key)
	case !same(r.Value, value):
		return fmt.Sprintf("value %.40q (%d bytes), want %.40q (%d bytes)", r.Value, len(r.Value), value, len(value))
	case !r.Timestamp.Equal(pooledTime(r.Partition, j)):
		return fmt.Sprintf("timestamp %v, want %v", r.Timestamp, pooledTime(r.Partition, j))
	case len(r.Headers) != len(hdrs):
		return fmt.Sprintf("headers %v, want %v", r.Headers, hdrs)
	}
	for i := range hdrs {
		if r.Headers[i].Key != hdrs[i].Key || !same(r.Headers[i].Value, hdrs[i].Value) {
			return fmt.Sprintf("headers %v, want %v", r.Headers, hdrs)
		}
	}
	return ""
}

// contentCheck collects what the members processed and dead-lettered,
// and every record that did not hold what was produced at its offset.
type contentCheck struct {
	topic string
	mu    sync.Mutex
	seen  map[sluice.TopicPartition]map[int64]int // times processed or dead-lettered
	bad   []string
	n     atomic.Int64 // distinct offsets seen
}

func newContentCheck(topic string) *contentCheck {
	return &contentCheck{topic: topic, seen: map[sluice.TopicPartition]map[int64]int{}}
}

func (c *contentCheck) check(where string, r sluice.Record) {
	d := contentDiff(c.topic, r)
	c.mu.Lock()
	defer c.mu.Unlock()
	if d != "" {
		c.bad = append(c.bad, fmt.Sprintf("%s %d/%d: %s", where, r.Partition, r.Offset, d))
	}
	tp := sluice.TopicPartition{Topic: r.Topic, Partition: r.Partition}
	if c.seen[tp] == nil {
		c.seen[tp] = map[int64]int{}
	}
	c.seen[tp][r.Offset]++
	if c.seen[tp][r.Offset] == 1 {
		c.n.Add(1)
	}
}

// invalidOffset: the records the graphs dead-letter.
func invalidOffset(o int64) bool { return o%17 == 3 }

// pooledGraph checks each record as it comes out of kgo (Map), dead-letters
// some (invalidOffset: the dead letter is written later, from the
// runtime's copy), holds the others in batches of 40 (records of several
// fetches) and checks them again as the batch completes.
func (c *contentCheck) graph(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	valid := stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
		if d := contentDiff(c.topic, r); d != "" {
			c.mu.Lock()
			c.bad = append(c.bad, fmt.Sprintf("taken %d/%d: %s", r.Partition, r.Offset, d))
			c.mu.Unlock()
		}
		if invalidOffset(r.Offset) {
			return r, sluice.Invalid(errors.New("invalid"))
		}
		return r, nil
	}, stages.Name("validate"))
	return stages.Each(stages.Batch(valid, 40, 20*time.Millisecond), func(_ context.Context, batch []sluice.Record) error {
		for _, r := range batch {
			c.check("batched", r)
		}
		return nil
	})
}

func (c *contentCheck) deadLetter(_ context.Context, dl sluice.DeadLetter) error {
	if !invalidOffset(dl.Record.Offset) {
		c.mu.Lock()
		c.bad = append(c.bad, fmt.Sprintf("dead letter of a valid record %d/%d", dl.Record.Partition, dl.Record.Offset))
		c.mu.Unlock()
	}
	c.check("dead letter", dl.Record)
	return nil
}

// Every record the franz source hands over keeps its key, value, headers,
// offset and timestamp while kgo recycles its kgo.Record and reuses the
// batch's slice for later fetches: checked as the record is taken, again
// after a Batch stage held it across fetches, and as it is dead-lettered
// (from the runtime's copy). The in-flight budget (300 records for 6
// partitions) pauses partitions all the time, so kgo strips and fetches
// batches again from inside (records decoded and not kept), and a second
// member joins half way (a rebalance: records of revoked partitions
// dropped, partitions consumed again from the committed offsets). Batches
// of about 250 records, compressed or not; null keys and values, 40 KB
// values, headers. At the end the group's commits are exactly the end of
// every partition.
func TestPooledRecordsKeepTheirContent(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compressed=%v", compress), func(t *testing.T) {
			const topic, partitions, perPart, perBatch = "pooled", 6, 3000, 250
			b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions))
			produceContent(t, b, topic, partitions, perPart, perBatch, compress)
			c := newContentCheck(topic)
			group := fmt.Sprintf("g-pooled-%v", compress)
			opts := []pipeline.Option{pipeline.WithMaxInFlight(300), pipeline.WithDeadLetter(c.deadLetter)}
			first := testkit.Start(t, newTestSource(t, b, group, topic), c.graph, opts...)
			first.WaitUntil(t, "a third of the records", func() bool { return c.n.Load() >= partitions*perPart/3 })
			second := testkit.Start(t, newTestSource(t, b, group, topic), c.graph, opts...)
			first.WaitUntil(t, "every record", func() bool { return c.n.Load() == partitions*perPart })
			second.WaitUntil(t, "every record", func() bool { return c.n.Load() == partitions*perPart })
			if err := second.Stop(t); err != nil {
				t.Fatal(err)
			}
			if err := first.Stop(t); err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.bad) > 0 {
				t.Errorf("%d records changed, first: %s", len(c.bad), c.bad[0])
			}
			var again int
			for _, offs := range c.seen {
				for _, k := range offs {
					again += k - 1
				}
			}
			t.Logf("%d records processed again after the rebalance", again)
			got := b.Committed(t, group, topic)
			for p := range int32(partitions) {
				if got[p] != perPart {
					t.Errorf("partition %d committed at %d, want %d", p, got[p], perPart)
				}
			}
		})
	}
}
