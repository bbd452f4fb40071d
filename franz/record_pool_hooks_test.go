package franz

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// unbufferedCheck is a kgo hook (as kprom's and kotel's are) that looks
// at each record the client hands over (HookFetchRecordUnbuffered, polled)
// and notes those that no longer hold what was produced.
type unbufferedCheck struct {
	topic  string
	polled atomic.Int64
	mu     sync.Mutex
	bad    []string
}

func (u *unbufferedCheck) OnFetchRecordUnbuffered(r *kgo.Record, polled bool) {
	if !polled {
		return
	}
	u.polled.Add(1)
	sr := sluice.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	for _, h := range r.Headers {
		sr.Headers = append(sr.Headers, sluice.Header{Key: h.Key, Value: h.Value})
	}
	if d := contentDiff(u.topic, sr); d != "" {
		u.mu.Lock()
		u.bad = append(u.bad, fmt.Sprintf("%q %d/%d: %s", r.Topic, r.Partition, r.Offset, d))
		u.mu.Unlock()
	}
}

// A kgo hook given in Config.Opts (kgo.WithHooks is allowed) sees every
// record the client hands over (HookFetchRecordUnbuffered, polled) intact,
// while the source recycles the records it took. kgo runs the hooks of a
// poll after the poll's locks are released; a rebalance that stops kgo's
// fetch session in between (assignPartitions, stopSession) takes the
// queued dispatch and runs it on a goroutine of its own, which may run
// after the poll loop converted and recycled the records. Members join
// and leave the group all along, so rebalances keep coming while records
// are polled.
func TestPooledRecordsIntactInFetchHooks(t *testing.T) {
	const topic, partitions, perPart, perBatch = "hooked", 6, 6000, 100
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions))
	produceContent(t, b, topic, partitions, perPart, perBatch, false)
	c := newContentCheck(topic)
	hook := &unbufferedCheck{topic: topic}
	const group = "g-hooked"
	opts := []pipeline.Option{pipeline.WithMaxInFlight(300), pipeline.WithDeadLetter(c.deadLetter)}
	first := testkit.Start(t, newTestSource(t, b, group, topic, kgo.WithHooks(hook)), c.graph, opts...)
	deadline := time.Now().Add(30 * time.Second)
	for c.n.Load() < partitions*perPart && time.Now().Before(deadline) {
		other := testkit.Start(t, newTestSource(t, b, group, topic, kgo.WithHooks(hook)), c.graph, opts...)
		seen := c.n.Load()
		other.WaitUntil(t, "more records", func() bool { return c.n.Load() >= min(seen+500, partitions*perPart) })
		if err := other.Stop(t); err != nil {
			t.Fatal(err)
		}
	}
	first.WaitUntil(t, "every record", func() bool { return c.n.Load() == partitions*perPart })
	if err := first.Stop(t); err != nil {
		t.Fatal(err)
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	t.Logf("hook saw %d polled records", hook.polled.Load())
	if len(hook.bad) > 0 {
		t.Errorf("a fetch hook saw %d records changed, first: %s", len(hook.bad), hook.bad[0])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bad) > 0 {
		t.Errorf("%d records changed, first: %s", len(c.bad), c.bad[0])
	}
}
