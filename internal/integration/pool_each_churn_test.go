package integration

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestPoolEachGraphUnderChurn is the churn of TestGroupMembershipChurn
// (cooperative-sticky: nothing may be processed twice) with a graph whose
// stages take their fast paths and leave them: a Pool whose calls alternate
// between stretches of a thousand fast ones (made on its own goroutine) and
// of slow ones (on its workers), with a call every 257th record that blocks
// for 3ms (the hedge hands its chunk to the workers and a relief takes the
// input), then an Each whose fast calls are kept and completed in groups.
// Every record reaching Each must carry its own key and value (Fill's key
// is "partition-offset" on a fresh topic), every offset is processed
// exactly once, every ownership starts at the committed offset and
// proceeds without a gap, and the group ends committed at the high
// watermarks. It runs on both backends (SLUICE_TEST_BROKER=apache for a
// real broker).
func TestPoolEachGraphUnderChurn(t *testing.T) {
	for _, budget := range []int{0, 300} {
		// A budget of 300 records for up to 8 partitions a member pauses
		// partitions all the time: the sources hold what the client
		// returned for a paused partition and deliver it on resume.
		var opts []pipeline.Option
		name, perPartition := "default budget", 20_000
		if budget > 0 {
			// librdkafka refetches what a pause purged, so a partition
			// paused this often moves a few thousand records a second:
			// fewer records keep the run short.
			opts = append(opts, pipeline.WithMaxInFlight(budget))
			name, perPartition = fmt.Sprintf("budget %d", budget), 5_000
		}
		t.Run("librdkafka/"+name, func(t *testing.T) {
			t.Parallel()
			poolEachChurn(t, perPartition, func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source {
				return newSource(t, b, group, topic, map[string]any{"partition.assignment.strategy": "cooperative-sticky"})
			}, opts...)
		})
		t.Run("franz/"+name, func(t *testing.T) {
			t.Parallel()
			poolEachChurn(t, perPartition, franzMember(kgo.Balancers(kgo.CooperativeStickyBalancer())), opts...)
		})
	}
}

func poolEachChurn(t *testing.T, perPartition int, newSrc newMemberSource, opts ...pipeline.Option) {
	const parts = 8
	b := kafkatest.NewBroker(t)
	const topic, group = "poolchurn", "poolchurn-g"
	total, hw := fillTopic(t, b, topic, parts, perPartition)
	seen := newOffsets(hw)
	es := &epochs{b: b, group: group, topic: topic}
	want := make([]byte, 16)
	for i := range want {
		want[i] = byte('a' + i%26)
	}
	var wrong atomic.Int64
	var firstWrong atomic.Pointer[string]

	var observers []*groupObserver
	member := func(name string) (*consumer, *groupObserver) {
		obs := newGroupObserver()
		observers = append(observers, obs)
		build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			e := es.begin(name, p.Partition)
			type seenRec struct {
				r   sluice.Record
				key string // the key as the Pool's call saw it
			}
			pooled := stages.Pool(in, 4, func(_ context.Context, r sluice.Record) (seenRec, error) {
				// The work, not synchronisation: stretches of fast calls
				// (made on the Pool's goroutine) and of slow ones (on its
				// workers), and now and then one that blocks for 3ms.
				switch {
				case r.Offset%257 == 0:
					time.Sleep(3 * time.Millisecond)
				case r.Offset%2000 >= 1000 && r.Offset%2 == 0:
					time.Sleep(time.Millisecond)
				}
				return seenRec{r: r, key: string(r.Key)}, nil
			})
			return stages.Each(pooled, func(_ context.Context, v seenRec) error {
				r := v.r
				wantKey := fmt.Sprintf("%d-%d", r.Partition, r.Offset)
				if v.key != wantKey || string(r.Key) != wantKey || !bytes.Equal(r.Value, want) {
					if wrong.Add(1) == 1 {
						s := fmt.Sprintf("%s: record %d@%d has key %q (Pool saw %q) value %q", name, r.Partition, r.Offset, r.Key, v.key, r.Value)
						firstWrong.Store(&s)
					}
				}
				e.record(r.Offset)
				seen.add(r.Partition, r.Offset)
				return nil
			})
		}
		return startConsumer(t, name, newSrc(t, b, group, topic), build, append([]pipeline.Option{pipeline.WithHooks(obs)}, opts...)...), obs
	}
	progress := func(frac float64) func() bool {
		return func() bool { return seen.total.Load() >= int64(frac*float64(total)) }
	}

	began := time.Now()
	a, _ := member("A")
	waitFor(t, "10% processed", progress(0.10), a)
	bc, bObs := member("B")
	waitFor(t, "B getting partitions", func() bool { return bObs.owns() > 0 }, a, bc)
	waitFor(t, "35% processed", progress(0.35), a, bc)
	cc, cObs := member("C")
	waitFor(t, "C getting partitions", func() bool { return cObs.owns() > 0 }, a, bc, cc)
	waitFor(t, "60% processed", progress(0.60), a, bc, cc)
	bc.stop(t)
	t.Logf("B left at %d processed (%v)", seen.total.Load(), time.Since(began))
	b.WaitCommitted(t, group, topic, b.HighWatermarks(t, topic))
	a.stop(t)
	cc.stop(t)

	if n := wrong.Load(); n > 0 {
		t.Errorf("%d records reached Each with bytes not their own; first: %s", n, *firstWrong.Load())
	}
	dups := seen.check(t)
	perMember := es.check(t)
	var paused int64
	for _, o := range observers {
		paused += o.paused.Load()
	}
	t.Logf("processed per member %v; %d ownership epochs; %d pauses; %v", perMember, len(es.all), paused, time.Since(began))
	if dups != 0 {
		t.Errorf("%d records processed twice, want none (cooperative-sticky)", dups)
	}
	checkCommittedEquals(t, b, group, topic, hw)
}
