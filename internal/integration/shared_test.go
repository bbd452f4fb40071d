package integration

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// batchEpoch is one ownership of a partition feeding a SharedBatcher: the
// offsets that reached the batcher's Feed stage, when each was first
// written, and when the graph closed (its OnClose hook ran, after every
// stage exited and before the revoke's commit).
type batchEpoch struct {
	*epoch
	mu      sync.Mutex
	fed     []int64
	written map[int64]int64 // offset -> sequence number of its first write
	closed  int64           // sequence number of the close; 0 while open
}

type batchVal struct {
	e   *batchEpoch
	off int64
	p   int32
}

// TestSharedBatcherAcrossRebalance: two consumers, each with its own
// SharedBatcher fed by every partition it owns. B joins while records
// flow (taking partitions from A), then leaves gracefully (giving them
// back). Every record is written at least once, the group ends committed
// at the high watermarks, and every value a revoked partition fed to the
// batcher was written before that partition's revoke completed.
func TestSharedBatcherAcrossRebalance(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 3000
	b := kafkatest.NewBroker(t)
	const topic, group = "shared", "shared-g"
	total, hw := fillTopic(t, b, topic, parts, perPartition)
	written := newOffsets(hw)
	es := &epochs{b: b, group: group, topic: topic}
	var seq atomic.Int64 // orders writes and closes
	var emu sync.Mutex
	var all []*batchEpoch

	member := func(name string) (*consumer, *groupObserver) {
		batcher := stages.NewSharedBatcher(func(_ context.Context, batch []batchVal) error {
			time.Sleep(10 * time.Millisecond) // the write; keeps the stream going across the rebalances
			s := seq.Add(1)
			for _, v := range batch {
				written.add(v.p, v.off)
				v.e.mu.Lock()
				if _, ok := v.e.written[v.off]; !ok {
					v.e.written[v.off] = s
				}
				v.e.mu.Unlock()
			}
			return nil
		}, 32, 20*time.Millisecond)
		build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			e := &batchEpoch{epoch: es.begin(name, p.Partition), written: map[int64]int64{}}
			emu.Lock()
			all = append(all, e)
			emu.Unlock()
			p.OnClose(func(context.Context) error {
				e.mu.Lock()
				e.closed = seq.Add(1)
				e.mu.Unlock()
				return nil
			})
			vals := stages.Map(in, func(_ context.Context, r sluice.Record) (batchVal, error) {
				e.record(r.Offset)
				e.mu.Lock()
				e.fed = append(e.fed, r.Offset)
				e.mu.Unlock()
				return batchVal{e: e, off: r.Offset, p: r.Partition}, nil
			})
			return batcher.Feed(vals)
		}
		obs := newGroupObserver()
		// A small partition queue keeps what a revoke has to write (and
		// so the rebalance) short.
		return startConsumer(t, name, newSource(t, b, group, topic, nil), build,
			pipeline.WithPartitionQueue(512), pipeline.WithHooks(obs)), obs
	}
	progress := func(frac float64) func() bool {
		return func() bool { return written.total.Load() >= int64(frac*float64(total)) }
	}

	a, aObs := member("A")
	waitFor(t, "5% written", progress(0.05), a)
	bc, bObs := member("B")
	waitFor(t, "B getting partitions", func() bool { return bObs.owns() > 0 }, a, bc)
	t.Logf("B owns %d partitions at %d written", bObs.owns(), written.total.Load())
	waitFor(t, "B writing", func() bool { return es.check(t)["B"] >= 1000 }, a, bc)
	bc.stop(t)
	t.Logf("B left at %d written", written.total.Load())
	b.WaitCommitted(t, group, topic, b.HighWatermarks(t, topic))
	a.stop(t)

	dups := written.check(t)
	perMember := es.check(t)
	t.Logf("%d values written twice; Map saw per member %v", dups, perMember)
	if perMember["B"] == 0 {
		t.Errorf("B fed nothing: the rebalance happened after the stream ended")
	}
	if l := aObs.lost.Load() + bObs.lost.Load(); l != 0 {
		t.Errorf("%d partitions lost", l)
	}
	revokedMidStream := 0
	emu.Lock()
	defer emu.Unlock()
	for _, e := range all {
		e.mu.Lock()
		if e.closed == 0 {
			t.Errorf("%s/%d: graph never closed", e.member, e.p)
		}
		for _, off := range e.fed {
			if w, ok := e.written[off]; !ok || w > e.closed {
				t.Errorf("%s/%d: offset %d fed to the batcher, written at %d (%v), revoke completed at %d",
					e.member, e.p, off, w, ok, e.closed)
				break
			}
		}
		if len(e.fed) > 0 && e.fed[len(e.fed)-1] < hw[e.p]-1 {
			revokedMidStream++
		}
		e.mu.Unlock()
	}
	t.Logf("%d ownership epochs, %d revoked before the end of their partition", len(all), revokedMidStream)
	if revokedMidStream == 0 {
		t.Errorf("no partition was revoked mid-stream: the test exercised nothing")
	}
	checkCommittedEquals(t, b, group, topic, hw)
}
