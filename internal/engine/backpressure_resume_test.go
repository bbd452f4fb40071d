package engine_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/enginetest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// scriptSource is a source whose poll loop is the test's own script, to
// drive the Group step by step.
type scriptSource = enginetest.SourceFunc

func recordsOf(tp sluice.TopicPartition, n int) []sluice.Record {
	out := make([]sluice.Record, n)
	for i := range out {
		out[i] = sluice.Record{Topic: tp.Topic, Partition: tp.Partition, Offset: int64(i)}
	}
	return out
}

// A paused partition is resumed only once it drained to the low
// watermark: its own count at most half its queue, and the records in
// flight at most three quarters of WithMaxInFlight. One record fewer in
// flight than that, one at a time, is not enough. The test completes the
// records one by one (Each waits for a token per record) and asks
// Resumable after each: it must list the partition exactly at the
// watermark, not a record earlier (librdkafka throws a paused
// partition's prefetch away, so resuming as soon as one slot frees would
// pause and refetch over and over).
func TestPausedPartitionResumesOnlyAtTheLowWatermark(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      []pipeline.Option
		delivered int // records delivered (all admitted; the partition pauses)
		resumeAt  int // records completed when Resumable first lists it
	}{
		// Own queue 100: paused at 100 held, resumable at 50 held.
		{"partition queue", []pipeline.Option{pipeline.WithPartitionQueue(100)}, 100, 50},
		// Global limit 100 (queue 1000, half 500): paused at 100 in
		// flight, resumable at 75.
		{"global records", []pipeline.Option{pipeline.WithPartitionQueue(1000), pipeline.WithMaxInFlight(100)}, 100, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tp := sluice.TopicPartition{Topic: "t", Partition: 0}
				token := make(chan struct{})
				src := scriptSource(func(ctx context.Context, g sluice.Group) error {
					defer g.Shutdown()
					if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
						return err
					}
					if !g.Deliver(tp, recordsOf(tp, tc.delivered)) {
						t.Errorf("Deliver of %d records did not pause the partition", tc.delivered)
						return nil
					}
					for done := 1; done <= tc.delivered; done++ {
						token <- struct{}{}
						synctest.Wait() // record done-1 completed, left the budget
						got := g.Resumable()
						if done < tc.resumeAt && len(got) != 0 {
							t.Errorf("resumed %v after %d of %d records completed, want no resume before %d", got, done, tc.delivered, tc.resumeAt)
							return nil
						}
						if done == tc.resumeAt {
							if !slices.Equal(got, []sluice.TopicPartition{tp}) {
								t.Errorf("Resumable = %v after %d of %d records completed, want [%v]", got, done, tc.delivered, tp)
							}
							return nil // Shutdown drops the rest
						}
					}
					return nil
				})
				err := pipeline.Run(context.Background(), src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Each(in, func(ctx context.Context, _ sluice.Record) error {
						select {
						case <-token:
							return nil
						case <-ctx.Done():
							return ctx.Err()
						}
					})
				}, tc.opts...)
				if err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
