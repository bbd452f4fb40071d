package integration

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// inFlightObserver records the largest in-flight count the runtime
// reported, on top of the group events.
type inFlightObserver struct {
	*groupObserver
	max atomic.Int64
}

func (o *inFlightObserver) OnInFlight(records, _ int64) {
	for {
		m := o.max.Load()
		if records <= m || o.max.CompareAndSwap(m, records) {
			return
		}
	}
}

// TestBackpressureBoundsInFlight: 64 partitions, a slow stage (20ms a
// record) and WithMaxInFlight(N). The runtime pauses partitions instead of
// buffering: the in-flight count never exceeds N plus one Deliver batch
// per partition (the Kafka source hands over at most 128 records per
// Deliver and a partition is paused by the Deliver that reached the
// budget; librdkafka drops what it had prefetched for a paused
// partition). The poll loop keeps polling, so the consumer stays in its
// group for longer than max.poll.interval.ms: no partition is lost,
// revoked or re-assigned. The shutdown commits exactly what completed.
func TestBackpressureBoundsInFlight(t *testing.T) {
	t.Parallel()
	const (
		parts        = 64
		perPartition = 2000 // well over one Deliver batch, all prefetched by librdkafka
		maxInFlight  = 1000
		deliverBatch = 128 // source.maxBatch: records per Deliver call
		work         = 20 * time.Millisecond
		// At least drain timeout (500ms) + the source's commit timeout (4s,
		// 40% of its CloseTimeout): it rejects a max.poll.interval.ms a
		// revoke cannot fit in.
		pollInterval = 6 * time.Second
	)
	b := kafkatest.NewBroker(t)
	const topic, group = "slow", "slow-g"
	b.CreateTopic(t, topic, parts)
	b.Fill(t, topic, perPartition, 16)

	var completed [parts]atomic.Int64
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			timer := time.NewTimer(work) // the work; it stops when the partition does
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			if got := completed[r.Partition].Add(1) - 1; got != r.Offset {
				t.Errorf("partition %d: completed offset %d as the record number %d", r.Partition, r.Offset, got)
			}
			return nil
		})
	}
	obs := &inFlightObserver{groupObserver: newGroupObserver()}
	src := newSource(t, b, group, topic, map[string]any{
		"max.poll.interval.ms": int(pollInterval.Milliseconds()),
		"session.timeout.ms":   int(pollInterval.Milliseconds()),
	})
	c := startConsumer(t, "slow", src, build,
		pipeline.WithMaxInFlight(maxInFlight),
		pipeline.WithDrainTimeout(500*time.Millisecond),
		pipeline.WithHooks(obs))
	waitFor(t, "all partitions assigned", func() bool { return obs.owns() == parts }, c)

	// Stay well past max.poll.interval.ms with the budget full.
	hold := time.NewTimer(pollInterval * 3 / 2)
	select {
	case <-hold.C:
	case <-c.Done():
		t.Fatalf("Run returned early: %v", c.Err())
	}
	if a, r, l := obs.assigned.Load(), obs.revoked.Load(), obs.groupObserver.lost.Load(); a != parts || r != 0 || l != 0 {
		t.Errorf("after %v: %d partitions assigned, %d revoked, %d lost; want %d, 0, 0 (the consumer left its group)",
			pollInterval*3/2, a, r, l, parts)
	}
	c.stop(t)

	maxSeen, bound := obs.max.Load(), int64(maxInFlight+parts*deliverBatch)
	var done int64
	for p := range parts {
		done += completed[p].Load()
	}
	t.Logf("max in flight %d (budget %d, bound %d), %d pauses, %d of %d records completed",
		maxSeen, maxInFlight, bound, obs.paused.Load(), done, parts*perPartition)
	if maxSeen > bound {
		t.Errorf("max in flight %d, want at most %d + %d*%d = %d", maxSeen, maxInFlight, parts, deliverBatch, bound)
	}
	if maxSeen < maxInFlight || obs.paused.Load() == 0 {
		t.Errorf("max in flight %d with %d pauses: the budget of %d was never reached, the test exercised nothing",
			maxSeen, obs.paused.Load(), maxInFlight)
	}
	if done >= parts*perPartition {
		t.Errorf("every record completed: the stage was not slow enough to keep the budget full")
	}
	committed := b.Committed(t, group, topic)
	for p := range int32(parts) {
		want, ok := completed[p].Load(), true
		got, has := committed[p]
		if want == 0 {
			ok = !has
		} else {
			ok = has && got == want
		}
		if !ok {
			t.Errorf("partition %d committed %d (present %v), want the %d completed records", p, got, has, want)
		}
	}
}
