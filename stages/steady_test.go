package stages_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// TestSteadyStateAllocations runs graphs on genSource and checks the heap
// allocations per record once every buffer has grown (after a warm-up):
// no stage and nothing of the runtime allocates per record, and per chunk
// only a Pool that starts workers does. The limits leave room for what is
// not per record: a Batch allocates the slice it hands over (one per
// batch, by contract), a Pool the closure of each worker it starts (up to
// its workers per chunk of 256 when values come in bursts: its workers
// leave when it has nothing to do), a resume (one per
// pause, every couple of thousand records here) and an Offsets call
// allocate their result, the tracker's ring may double once
// more, the Go runtime's own background work.
func TestSteadyStateAllocations(t *testing.T) {
	cases := []struct {
		name  string
		wire  func(in pipeline.Stream[int64]) pipeline.End
		limit float64 // allocations per record
		bytes float64 // heap bytes allocated per record
	}{
		{"Map+Discard", func(in pipeline.Stream[int64]) pipeline.End { return stages.Discard(in) }, 0.002, 4},
		{"Pool4", func(in pipeline.Stream[int64]) pipeline.End { return stages.Discard(stages.Pool(in, 4, inc)) }, 4.0/256 + 0.002, 4},
		{"PoolByKey4", func(in pipeline.Stream[int64]) pipeline.End {
			return stages.Discard(stages.PoolByKey(in, 4, func(v int64) string { return "k" }, inc))
		}, 4.0/256 + 0.002, 4},
		{"Each", func(in pipeline.Stream[int64]) pipeline.End {
			return stages.Each(in, func(context.Context, int64) error { return nil })
		}, 0.002, 4},
		{"Batch500", func(in pipeline.Stream[int64]) pipeline.End { return stages.Discard(stages.Batch(in, 500, 0)) },
			1.0/500 + 0.002, 8 + 4},
		{"GraphB", graphB, 1.0/500 + 8.0/256 + 0.002, 8 + 4}, // a batch is 500 int64s: 8 bytes per record
	}
	// A multiple of 500 (no partial batch waits at the end), long enough
	// that one more doubling of the tracker's ring (its size follows the
	// records in flight) stays below the byte limits.
	const window = 300_000
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			allocs, bytes := steadyAllocs(t, c.wire, 20_000, window)
			if allocs > c.limit {
				t.Errorf("%.5f allocations per record in steady state, want at most %.5f", allocs, c.limit)
			}
			if bytes > c.bytes {
				t.Errorf("%.2f bytes allocated per record in steady state, want at most %.2f", bytes, c.bytes)
			}
		})
	}
}

// steadyAllocs runs warm records through the graph built by wire, then
// window more, and returns the heap allocations and bytes allocated per
// record of the window.
func steadyAllocs(t *testing.T, wire func(in pipeline.Stream[int64]) pipeline.End, warm, window int64) (allocs, bytes float64) {
	t.Helper()
	src := &genSource{total: warm + window, warm: warm, warmed: make(chan struct{}), done: make(chan struct{})}
	build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return wire(stages.Map(in, func(_ context.Context, r sluice.Record) (int64, error) { return r.Offset, nil }))
	}
	// A queue of 4096 (not the default 16384) keeps the tracker's ring,
	// whose size follows the records in flight, at its final size by the
	// end of the warm-up: a doubling in the window would count as bytes
	// per record.
	r := testkit.Start(t, src, build, pipeline.WithPartitionQueue(4096))
	var before, after runtime.MemStats
	select {
	case <-src.warmed:
	case <-r.Done():
		t.Fatalf("Run returned during the warm-up: %v", r.Err())
	}
	runtime.ReadMemStats(&before)
	select {
	case <-src.done:
	case <-r.Done():
		t.Fatalf("Run returned early: %v", r.Err())
	}
	runtime.ReadMemStats(&after)
	if err := r.Stop(t); err != nil {
		t.Fatal(err)
	}
	n := float64(src.timed())
	return float64(after.Mallocs-before.Mallocs) / n, float64(after.TotalAlloc-before.TotalAlloc) / n
}
