package stages_test

import (
	"context"
	"runtime"
	"testing"
	"time"

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
	// A queue of 4096 (not the default 32768) keeps the tracker's ring,
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

// BenchmarkSteady measures the runtime and the stages in steady state:
// genSource makes the records on the fly (it holds no log, unlike the
// testkit Fake, so neither the setup nor the GC of a b.N-record log shows
// in the profile), a warm-up of steadyWarm records grows every buffer
// first, and the timer covers the records after it (b.N, plus what the
// warm-up did not finish). ns/msg, allocs/msg and B/msg are per record of
// that window (allocs/msg exact: the testing package rounds allocs/op
// down to an integer); ns/op divides by b.N.
//
//	go test -run '^$' -bench Steady -benchtime 1000000x ./stages/
//
// GraphB is the benchmarks' reference graph (b): Map, Pool(8), Batch(500),
// Each.
func BenchmarkSteady(b *testing.B) {
	graphs := []struct {
		name string
		wire func(in pipeline.Stream[int64]) pipeline.End
	}{
		{"Baseline", func(in pipeline.Stream[int64]) pipeline.End { return stages.Discard(in) }},
		{"Pool4", func(in pipeline.Stream[int64]) pipeline.End { return stages.Discard(stages.Pool(in, 4, inc)) }},
		{"PoolByKey4", func(in pipeline.Stream[int64]) pipeline.End {
			return stages.Discard(stages.PoolByKey(in, 4, func(int64) string { return "k" }, inc))
		}},
		{"Batch100", func(in pipeline.Stream[int64]) pipeline.End {
			return stages.Discard(stages.Batch(in, 100, time.Second))
		}},
		{"Each", func(in pipeline.Stream[int64]) pipeline.End {
			return stages.Each(in, func(context.Context, int64) error { return nil })
		}},
		{"GraphB", graphB},
	}
	for _, g := range graphs {
		b.Run(g.name, func(b *testing.B) { benchSteady(b, g.wire) })
	}
}

// graphB is Map (in benchSteady), Pool(8), Batch(500), Each.
func graphB(in pipeline.Stream[int64]) pipeline.End {
	batches := stages.Batch(stages.Pool(in, 8, inc), 500, 10*time.Millisecond)
	return stages.Each(batches, func(_ context.Context, vs []int64) error {
		if len(vs) == 0 {
			return context.Canceled // never: a batch holds at least one value
		}
		return nil
	})
}

// steadyWarm is how many records run before the timed window.
const steadyWarm = 50_000

func benchSteady(b *testing.B, wire func(in pipeline.Stream[int64]) pipeline.End) {
	src := &genSource{total: steadyWarm + int64(b.N), warm: steadyWarm,
		warmed: make(chan struct{}), done: make(chan struct{})}
	build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return wire(stages.Map(in, func(_ context.Context, r sluice.Record) (int64, error) { return r.Offset, nil }))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- pipeline.Run(ctx, src, build) }()
	var before, after runtime.MemStats
	select {
	case <-src.warmed:
	case err := <-errc:
		b.Fatalf("Run returned during the warm-up: %v", err)
	}
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	select {
	case <-src.done:
	case err := <-errc:
		b.Fatalf("Run returned early: %v", err)
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	n := float64(src.timed())
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/msg")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/msg")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/msg")
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
}

// genSource is a sluice.Source of one partition whose records it makes
// as it delivers them, 64 at a time in one reused slice (so the runtime
// must copy what it keeps). It closes warmed once the first warm records
// are committable and the partition was paused once (its buffers, the
// tracker's ring, then have their full size; it delivers faster than
// most graphs run, else 4*warm records do), and done once all total are.
type genSource struct {
	total, warm  int64
	warmed, done chan struct{}
	warmAt       int64 // records committable when warmed was closed
}

// timed returns how many records the window after the warm-up holds.
// Call it once done is closed.
func (s *genSource) timed() int64 { return max(s.total-s.warmAt, 1) }

func (s *genSource) Run(ctx context.Context, g sluice.Group) error {
	tp := sluice.TopicPartition{Topic: "bench", Partition: 0}
	if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
		<-ctx.Done() // Run is stopping with the build error
		g.Shutdown()
		return nil
	}
	batch := make([]sluice.Record, 64)
	value := make([]byte, 100)
	var next, committed int64
	paused, warmed, done := false, false, false
	// The warm-up lasts until the partition was paused once: its buffers
	// (the tracker's ring) then have their full size.
	pausedOnce := false
	// Offsets allocates its result: like a real source, collect it now
	// and then (every 4096 records delivered, then every millisecond once
	// all are), not on every wake (one per completion for Each).
	var collected int64 // next at the last Offsets call
	collect := func() {
		collected = next
		for _, o := range g.Offsets() {
			if o.Next > committed {
				committed = o.Next
			}
		}
		if !warmed && committed >= s.warm && (pausedOnce || committed >= 4*s.warm || next >= s.total) {
			warmed = true
			s.warmAt = committed
			close(s.warmed)
		}
		if !done && committed >= s.total {
			done = true
			close(s.done)
		}
	}
	wake := func() {
		if paused && len(g.Resumable()) > 0 {
			paused = false
		}
		if next < s.total && next-collected >= 4096 {
			collect()
		}
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		g.Polled()
		if !paused && next < s.total {
			n := min(int64(len(batch)), s.total-next)
			for i := range n {
				batch[i] = sluice.Record{Topic: tp.Topic, Partition: tp.Partition, Offset: next + i, Value: value}
			}
			paused = g.Deliver(tp, batch[:n])
			pausedOnce = pausedOnce || paused
			next += n
			select {
			case <-g.Wake():
				wake()
			case <-ctx.Done():
				g.Shutdown()
				return nil
			default:
			}
			continue
		}
		var ticks <-chan time.Time
		if next >= s.total {
			ticks = tick.C
		}
		select {
		case <-g.Wake():
			wake()
		case <-ticks:
			collect()
		case <-ctx.Done():
			g.Shutdown()
			return nil
		}
	}
}
