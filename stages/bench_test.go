package stages_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/enginetest"
	"github.com/sluice-go/sluice/metrics"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// benchGraph pushes b.N records through the graph built by wire, with Run
// configured by opts, and reports ns/msg and allocs/msg (an op is one
// message).
func benchGraph(b *testing.B, wire func(in pipeline.Stream[int64]) pipeline.End, opts ...pipeline.Option) {
	enginetest.BenchCommitted(b, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		offs := stages.Map(in, func(_ context.Context, r sluice.Record) (int64, error) { return r.Offset, nil })
		return wire(offs)
	}, opts...)
}

func inc(_ context.Context, v int64) (int64, error) { return v + 1, nil }

// BenchmarkBaseline is the runtime alone (feeder, one Map, commit
// tracking); subtract it from the others to get the cost of their stages.
func BenchmarkBaseline(b *testing.B) {
	benchGraph(b, func(in pipeline.Stream[int64]) pipeline.End { return stages.Discard(in) })
}

func BenchmarkMapChain4(b *testing.B) {
	benchGraph(b, func(in pipeline.Stream[int64]) pipeline.End {
		return stages.Discard(stages.Map(stages.Map(stages.Map(stages.Map(in, inc), inc), inc), inc))
	})
}

func BenchmarkPool4(b *testing.B) {
	benchGraph(b, func(in pipeline.Stream[int64]) pipeline.End {
		return stages.Discard(stages.Pool(in, 4, inc))
	})
}

func BenchmarkPoolByKey4(b *testing.B) {
	key := func(v int64) string { return "k" }
	benchGraph(b, func(in pipeline.Stream[int64]) pipeline.End {
		return stages.Discard(stages.PoolByKey(in, 4, key, inc))
	})
}

func BenchmarkBatch100(b *testing.B) {
	benchGraph(b, func(in pipeline.Stream[int64]) pipeline.End {
		return stages.Discard(stages.Batch(in, 100, time.Second))
	})
}

func BenchmarkEach(b *testing.B) {
	var sum int64
	benchGraph(b, func(in pipeline.Stream[int64]) pipeline.End {
		return stages.Each(in, func(_ context.Context, v int64) error { sum += v; return nil })
	})
}

func BenchmarkBatchUnbatch100(b *testing.B) {
	benchGraph(b, func(in pipeline.Stream[int64]) pipeline.End {
		return stages.Discard(stages.Unbatch(stages.Batch(in, 100, time.Second)))
	})
}

// BenchmarkSharedBatcher100 is one partition feeding a SharedBatcher whose
// write does nothing: the batcher's own cost per message.
func BenchmarkSharedBatcher100(b *testing.B) {
	sb := stages.NewSharedBatcher(func(context.Context, []int64) error { return nil }, 100, time.Second)
	benchGraph(b, func(in pipeline.Stream[int64]) pipeline.End { return sb.Feed(in) })
}

// BenchmarkTee2 is every value down two branches (each discarded): the
// extra ticket reference and the second send per value.
func BenchmarkTee2(b *testing.B) {
	benchGraph(b, func(in pipeline.Stream[int64]) pipeline.End {
		br := stages.Tee(in, 2)
		return pipeline.All(stages.Discard(br[0]), stages.Discard(br[1]))
	})
}

// BenchmarkPool4Limiter is Pool4 under a consumer-wide Limiter of 4: the
// slot taken and given back per call (compare with Pool4).
func BenchmarkPool4Limiter(b *testing.B) {
	lim := stages.NewLimiter(4)
	benchGraph(b, func(in pipeline.Stream[int64]) pipeline.End {
		return stages.Discard(stages.Pool(in, 4, inc, lim))
	})
}

// BenchmarkPoolByKey4KeyLock is PoolByKey4 under a consumer-wide KeyLock
// (compare with PoolByKey4).
func BenchmarkPoolByKey4KeyLock(b *testing.B) {
	key := func(v int64) string { return "k" }
	keys := stages.NewKeyLock()
	benchGraph(b, func(in pipeline.Stream[int64]) pipeline.End {
		return stages.Discard(stages.PoolByKey(in, 4, key, inc, keys))
	})
}

// BenchmarkHooks runs stage graphs with no hooks, with metrics.Health
// only (no stage-call hook: stages read no clock) and with metrics.Metrics
// and Health (every stage call timed and observed), to show what hooks
// cost per message (docs/performance.md, "Hooks").
func BenchmarkHooks(b *testing.B) {
	graphs := []struct {
		name string
		wire func(in pipeline.Stream[int64]) pipeline.End
	}{
		{"Baseline", func(in pipeline.Stream[int64]) pipeline.End { return stages.Discard(in) }},
		{"MapChain4", func(in pipeline.Stream[int64]) pipeline.End {
			return stages.Discard(stages.Map(stages.Map(stages.Map(stages.Map(in, inc), inc), inc), inc))
		}},
		{"Pool4", func(in pipeline.Stream[int64]) pipeline.End { return stages.Discard(stages.Pool(in, 4, inc)) }},
		{"Each", func(in pipeline.Stream[int64]) pipeline.End {
			return stages.Each(in, func(context.Context, int64) error { return nil })
		}},
	}
	hookSets := []struct {
		name  string
		hooks func(b *testing.B) []pipeline.Option
	}{
		{"none", func(*testing.B) []pipeline.Option { return nil }},
		{"health", func(b *testing.B) []pipeline.Option {
			return []pipeline.Option{pipeline.WithHooks(newHealth(b))}
		}},
		{"metrics", func(b *testing.B) []pipeline.Option {
			m, err := metrics.New(prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			return []pipeline.Option{pipeline.WithHooks(m, newHealth(b))}
		}},
	}
	for _, g := range graphs {
		for _, hs := range hookSets {
			b.Run(g.name+"/"+hs.name, func(b *testing.B) { benchGraph(b, g.wire, hs.hooks(b)...) })
		}
	}
}

func newHealth(b *testing.B) *metrics.Health {
	h, err := metrics.NewHealth()
	if err != nil {
		b.Fatal(err)
	}
	return h
}
