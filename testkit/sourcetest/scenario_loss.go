package sourcetest

import (
	"context"
	"sync"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// lossThenReassign: the first graph of every partition processes [0, k)
// and holds offset k until its context ends. Once k is committed
// everywhere the driver evicts the group's member: it loses every
// partition, commits nothing more (the committed offsets stay at k), and
// once readmitted gets the partitions back and processes them from k to
// the end. Every offset is processed exactly once. Skipped unless the
// driver is an Evicter.
func lossThenReassign(t *testing.T, d Driver) {
	ev, ok := d.(Evicter)
	if !ok {
		t.Skip("the driver is not an Evicter")
	}
	const parts, n, k = 2, 60, int64(20)
	topic, group := newTopic(t, d, parts, n)

	s := newSeen()
	var mu sync.Mutex
	builds := map[int32]int{}
	build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		mu.Lock()
		builds[p.Partition]++
		first := builds[p.Partition] == 1
		mu.Unlock()
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			if first && r.Offset >= k {
				<-ctx.Done()
				return context.Cause(ctx)
			}
			s.add(r.Partition, r.Offset)
			return nil
		})
	}
	r, src := start(t, d, group, topic, build)
	waitCommitted(t, d, r, group, topic, uniform(parts, k))

	readmit := ev.Evict(t, group, topic)
	r.WaitUntil(t, "every partition lost", func() bool { return src.Counts().Lost == parts })
	checkCommitted(t, d, group, topic, uniform(parts, k))
	readmit()
	finishAll(t, d, r, s, group, topic, parts, n, n)
	if c := src.Counts(); c.Lost != parts || c.Revoked != 0 || c.Assigned != 2*parts {
		t.Errorf("lost %d, revoked %d, assigned %d partitions; want %d lost, none revoked, %d assigned (twice each)",
			c.Lost, c.Revoked, c.Assigned, parts, 2*parts)
	}
}
