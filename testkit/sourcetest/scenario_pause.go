package sourcetest

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// pauseResume: the end holds every record until every partition was
// paused by backpressure (a small partition queue), then lets them go.
// Each partition is paused and resumed, none gets records while paused
// (the checking group's §3), and every record is processed once, in
// order, and committed to the end.
func pauseResume(t *testing.T, d Driver) {
	const parts, n = 2, 300
	topic, group := newTopic(t, d, parts, n)

	s := newSeen()
	gate := make(chan struct{})
	last := []int64{-1, -1} // last[p] is written by partition p's Each only
	build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			if err := waitOpen(ctx, gate); err != nil {
				return err
			}
			if r.Offset != last[r.Partition]+1 {
				t.Errorf("partition %d: processed offset %d after %d, want them in order", r.Partition, r.Offset, last[r.Partition])
			}
			last[r.Partition] = r.Offset
			s.add(r.Partition, r.Offset)
			return nil
		})
	}
	r, src := start(t, d, group, topic, build, pipeline.WithPartitionQueue(8))
	r.WaitUntil(t, "every partition paused by backpressure", func() bool { return len(src.Paused()) == parts })
	close(gate)
	finishAll(t, d, r, s, group, topic, parts, n, n)
	if c := src.Counts(); c.Pauses < parts || c.Resumes < parts {
		t.Errorf("%d pauses asked for, %d partitions resumed; want at least %d each (%+v)", c.Pauses, c.Resumes, parts, c)
	}
}

// waitOpen blocks until gate is closed, or until ctx ends: it returns
// ctx's cause then, and nil once gate is closed.
func waitOpen(ctx context.Context, gate <-chan struct{}) error {
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
