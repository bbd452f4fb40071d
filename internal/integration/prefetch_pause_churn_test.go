package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// churnCase is one budget for TestPrefetchPauseChurnManyPartitions.
type churnCase struct {
	name string
	opts []pipeline.Option
}

// TestPrefetchPauseChurnManyPartitions: 96 partitions, four of them hot
// (many more records, some larger than librdkafka's 1 MiB prefetch queue),
// a stage that takes a little time per record, and limits that keep
// pausing and resuming partitions: librdkafka drops a paused partition's
// prefetched records and fetches them again on resume, through a queue of
// 1 MiB shared by all partitions. Under a tiny byte budget (64 KiB, below
// one large record), the default one and a huge one (8 GiB, a 32 MiB
// queue), every record is processed exactly once and in order within its
// partition, the consumer keeps its partitions, and the group commits the
// high watermarks.
func TestPrefetchPauseChurnManyPartitions(t *testing.T) {
	cases := []churnCase{
		{"tiny-budget", []pipeline.Option{pipeline.WithMaxInFlightBytes(64 << 10), pipeline.WithPartitionQueue(32)}},
		{"default-budget", []pipeline.Option{pipeline.WithMaxInFlight(600), pipeline.WithPartitionQueue(32)}},
		{"huge-budget", []pipeline.Option{pipeline.WithMaxInFlightBytes(8 << 30), pipeline.WithMaxInFlight(600), pipeline.WithPartitionQueue(32)}},
	}
	eachCase(t, cases, func(c churnCase) string { return c.name }, pauseChurnRun)
}

func pauseChurnRun(t *testing.T, tc churnCase) {
	const (
		parts, hot   = 96, 4
		coldRecords  = 100
		hotRecords   = 400
		hotLargeEach = 100 // every 100th record of a hot partition is 1.5 MiB
		work         = 100 * time.Microsecond
	)
	b := kafkatest.NewBroker(t)
	topic, group := "churn-"+tc.name, "churn-"+tc.name+"-g"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.CreateTopicContext(ctx, topic, parts, map[string]string{"max.message.bytes": fmt.Sprint(largeTopicMaxBytes)}); err != nil {
		t.Fatal(err)
	}
	cl := largeProducer(t, b)
	// The cold partitions: small records, all produced first.
	coldSizes := make([]int, coldRecords)
	for i := range coldSizes {
		coldSizes[i] = 200
	}
	vals := produceSizes(t, cl, topic, parts, coldSizes)
	// The hot partitions: more, with a large record now and then.
	var hotSizes []int
	for i := range hotRecords - coldRecords {
		if i%hotLargeEach == hotLargeEach-1 {
			hotSizes = append(hotSizes, 3<<19)
		} else {
			hotSizes = append(hotSizes, 2000)
		}
	}
	hv := produceSizes(t, cl, topic, hot, hotSizes)
	for p, vs := range hv {
		vals[p] = append(vals[p], vs...)
	}
	hw := b.HighWatermarks(t, topic)
	for p := range int32(parts) {
		if want := int64(len(vals[p])); hw[p] != want {
			t.Fatalf("partition %d: high watermark %d, produced %d", p, hw[p], want)
		}
	}
	vc := &valueChecker{offsets: newOffsets(hw), vals: vals}
	next := make([]int64, parts) // each partition's stage runs on its own goroutine
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			timer := time.NewTimer(work) // the work
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			if r.Offset != next[r.Partition] {
				t.Errorf("partition %d: processed offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition] = r.Offset + 1
			vc.see(t, r)
			return nil
		})
	}
	obs := newGroupObserver()
	src := newSource(t, b, group, topic, nil)
	began := time.Now()
	c := startConsumer(t, tc.name, src, build, append(tc.opts, pipeline.WithHooks(obs))...)
	waitFor(t, "the group to commit the high watermarks", func() bool {
		got, err := b.CommittedContext(t.Context(), group, topic)
		if err != nil || len(got) != len(hw) {
			return false
		}
		for p, h := range hw {
			if got[p] > h {
				t.Fatalf("partition %d committed %d, past its high watermark %d", p, got[p], h)
			}
			if got[p] != h {
				return false
			}
		}
		return true
	}, c)
	took := time.Since(began)
	c.stop(t)
	t.Logf("%v: %d records in %v, %d pauses", b.Kind(), vc.total.Load(), took, obs.paused.Load())
	if dups := vc.offsets.check(t); dups != 0 {
		t.Errorf("%d duplicate processings, want none (one consumer that keeps its partitions)", dups)
	}
	if a, r, l := obs.assigned.Load(), obs.revoked.Load(), obs.lost.Load(); a != parts || r != parts || l != 0 {
		t.Errorf("%d partitions assigned, %d revoked, %d lost; want %d, %d (at shutdown), 0", a, r, l, parts, parts)
	}
	if obs.paused.Load() == 0 {
		t.Errorf("no partition paused: the limits were never reached, the test exercised nothing")
	}
}
