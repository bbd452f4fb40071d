package integration

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// fetchFault is one error the partition leader answers Fetch requests
// with.
type fetchFault struct {
	err *kerr.Error
	// topLevel: the whole response carries the error (Fetch v7+'s
	// top-level ErrorCode) rather than each partition.
	topLevel bool
	// resets: librdkafka answers OFFSET_OUT_OF_RANGE by resetting the
	// fetch position with auto.offset.reset (earliest, the source's
	// default) and reading the partition again from its start. kfake
	// answers it for an offset that is in range; a Kafka broker would
	// only for one outside the log (after retention or an unclean leader
	// election), where the reset is what the user asked for.
	resets bool
}

func (f fetchFault) name() string {
	if f.topLevel {
		return "top-level-" + f.err.Message
	}
	return f.err.Message
}

var fetchFaults = []fetchFault{
	{err: kerr.NotLeaderForPartition},
	{err: kerr.ReplicaNotAvailable},
	{err: kerr.UnknownTopicOrPartition},
	{err: kerr.UnknownLeaderEpoch},
	{err: kerr.FencedLeaderEpoch},
	{err: kerr.KafkaStorageError},
	{err: kerr.OffsetNotAvailable},
	{err: kerr.CorruptMessage},
	{err: kerr.TopicAuthorizationFailed},
	{err: kerr.UnknownServerError},
	{err: kerr.UnknownServerError, topLevel: true},
	{err: kerr.OffsetOutOfRange, resets: true},
}

// TestFaultFetch: the leader fails every fetch of the topic for a while.
// The first 500 records of each partition are processed and committed;
// the fault starts; 500 more are produced. While the fault lasts none of
// them is processed, nothing is committed past what was, and Run keeps
// going; once it is removed the consumer reads on, processes every
// record exactly once (twice for the records before the fault when
// librdkafka resets the position on OFFSET_OUT_OF_RANGE), never
// rebalances, and the group commits the high watermarks.
func TestFaultFetch(t *testing.T) {
	eachCase(t, fetchFaults, fetchFault.name, fetchFaultRun)
}

func fetchFaultRun(t *testing.T, f fetchFault) {
	const parts, before, after = 4, 500, 500
	slug := "ffe-" + strings.ToLower(strings.ReplaceAll(f.name(), "_", "-"))
	r := newFaultRunSized(t, kafkatest.NewKfake(t), slug, parts, before, before+after)
	b, group, topic, seen, es := r.b, r.group, r.topic, r.seen, r.es

	obs := newCommitLog(b, group, topic)
	a := r.start(t, "A", 50*time.Millisecond, nil, nil, pipeline.WithHooks(obs), pipeline.WithDrainTimeout(5*time.Second))
	waitGroupAt(t, b, group, topic, uniform(parts, before), a)

	fault := kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Err: f.err, Count: -1}
	if f.topLevel {
		fault.Topic, fault.TopLevel = "", true // a top-level fault matches no entity
	}
	h := b.Cluster().Fault(fault)
	// A fetch already waiting for data when the fault was installed would
	// still answer with the new records: produce them only once a fetch
	// was faulted (librdkafka has one fetch in flight per broker).
	waitHits(t, h, 1, "the first fetch", a)
	b.Fill(t, topic, after, 16)
	hw := b.HighWatermarks(t, topic)
	if !maps.Equal(hw, uniform(parts, before+after)) {
		t.Fatalf("high watermarks %v, want %d on each partition", hw, before+after)
	}
	// One more faulted fetch: the new records were refused at least once.
	// (librdkafka backs a partition off 5s after a permanent fetch error
	// such as TOPIC_AUTHORIZATION_FAILED, 500ms after others.)
	waitHits(t, h, h.Hits()+1, "a fetch after the new records", a)
	a.stillRunning(t, "the fetch fault")
	if n, want := seen.distinct(), parts*before; n != want {
		t.Errorf("%d offsets processed during the fetch fault, want the %d fetched before it", n, want)
	}
	during := b.Committed(t, group, topic)
	h.Remove()
	t.Logf("%d fetches faulted; commits during the fault %v", h.Hits(), during)

	waitGroupAt(t, b, group, topic, hw, a)
	a.stillRunning(t, "the recovery")
	lost, revoked := stopCountingLosses(t, a, obs)

	r.watch.check(t)
	if f.resets {
		// The reset restarts the same ownership at offset 0: every
		// epoch jumps back once, from the last record before the fault.
		es.mu.Lock()
		for _, e := range es.all {
			e.mu.Lock()
			if want := fmt.Sprintf("0 after %d", before-1); e.gap != want || e.start != 0 {
				t.Errorf("%s/%d: started at %d, jumped %q; want a start at 0 and one jump %q", e.member, e.p, e.start, e.gap, want)
			}
			e.mu.Unlock()
		}
		es.mu.Unlock()
	} else {
		es.check(t)
	}
	seen.checkTimes(t, func(_ int32, off int64) int32 {
		if f.resets && off < before {
			return 2
		}
		return 1
	})
	wantNoLoss(t, lost, revoked)
	checkCommittedEquals(t, b, group, topic, hw)
}
